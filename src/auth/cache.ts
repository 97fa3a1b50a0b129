/**
 * A small async cache cleared by store change notifications. A load that started before a
 * clear is handed to its callers but not kept, so a change is never hidden by a stale load.
 * Entries also expire after `maxAgeMs`: Redis pub/sub loses notifications while its
 * connection is down, and this bounds how long a change made by another process then stays
 * unseen here.
 */
import { BoundedMap } from '../lib/bounded-cache.js';

export type AsyncCache<V> = {
  get(key: string, load: () => Promise<V>): Promise<V>;
  delete(key: string): void;
  clear(): void;
};

export type AsyncCacheOptions = { maxEntries?: number; maxAgeMs?: number; now?: () => number };

/** How long auth caches keep what they loaded when no change notification arrives. */
export const authCacheMaxAgeMs = 5_000;

export function createAsyncCache<V>(opts: AsyncCacheOptions = {}): AsyncCache<V> {
  const maxEntries = opts.maxEntries ?? 10_000;
  const maxAgeMs = opts.maxAgeMs ?? authCacheMaxAgeMs;
  const now = opts.now ?? Date.now;
  // Bounded: a flood of distinct keys empties the cache instead of growing it.
  const entries = new BoundedMap<string, { p: Promise<V>; until: number }>(maxEntries);
  let generation = 0;
  return {
    get(key, load) {
      const hit = entries.get(key);
      if (hit && hit.until > now()) return hit.p;
      const gen = generation;
      const p = load();
      entries.set(key, { p, until: now() + maxAgeMs });
      const drop = () => {
        if (entries.get(key)?.p === p) entries.delete(key);
      };
      p.then(() => {
        if (gen !== generation) drop();
      }, drop);
      return p;
    },
    delete(key) {
      generation++;
      entries.delete(key);
    },
    clear() {
      generation++;
      entries.clear();
    },
  };
}
