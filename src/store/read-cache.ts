/**
 * A read cache for the Redis store's `get`, so a GET of one object costs no round trip.
 * Entries are dropped by the change notifications of every process (pub/sub), by this
 * process's own commits at once, and all of them when the subscription connection has an
 * error; each also expires after maxAgeMs, which bounds staleness if notifications are lost
 * while Redis reconnects. A read racing a notification is not kept (per-key versions).
 * Writes never read through it: the transaction asks for fresh reads.
 */
import type { Entry } from './store.js';
import { deepFreeze } from './freeze.js';
import { BoundedMap } from '../lib/bounded-cache.js';

export type ReadCache = {
  /** The cached entry (undefined = known absent), or 'miss'. */
  lookup(key: string): Entry | undefined | 'miss';
  /** Loads through the cache when it is live. */
  load(key: string, fetch: () => Promise<Entry | undefined>): Promise<Entry | undefined>;
  invalidate(keys: readonly string[]): void;
  /** Live: the change subscription is up (entries are kept); not live: nothing is kept. */
  setLive(live: boolean): void;
};

export function createReadCache(opts: { maxAgeMs: number; maxEntries: number; now?: () => number }): ReadCache {
  const now = opts.now ?? Date.now;
  let live = false;
  let generation = 0;
  const entries = new BoundedMap<string, { entry: Entry | undefined; until: number }>(opts.maxEntries);
  // Forgetting the versions would let a load that started before a change store stale
  // data, so a full version map also ends every load in flight (generation).
  const versions = new BoundedMap<string, number>(opts.maxEntries, () => generation++);

  const cache: ReadCache = {
    lookup(key) {
      const hit = entries.get(key);
      if (!hit) return 'miss';
      if (hit.until <= now()) {
        entries.delete(key);
        return 'miss';
      }
      return hit.entry;
    },
    async load(key, fetch) {
      const cached = cache.lookup(key);
      if (cached !== 'miss') return cached;
      const version = versions.get(key) ?? 0;
      const gen = generation;
      const entry = await fetch();
      if (live && gen === generation && (versions.get(key) ?? 0) === version) {
        // Shared by every reader from now on: frozen, like the embedded store's values.
        if (entry) deepFreeze(entry.value);
        entries.set(key, { entry, until: now() + opts.maxAgeMs });
      }
      return entry;
    },
    invalidate(keys) {
      for (const k of keys) {
        entries.delete(k);
        versions.set(k, (versions.get(k) ?? 0) + 1);
      }
    },
    setLive(value) {
      live = value;
      entries.clear();
      generation++;
    },
  };
  return cache;
}
