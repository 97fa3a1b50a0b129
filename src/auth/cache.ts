/**
 * A small async cache cleared by store change notifications. A load that started before a
 * clear is handed to its callers but not kept, so a change is never hidden by a stale load.
 */
export type AsyncCache<V> = {
  get(key: string, load: () => Promise<V>): Promise<V>;
  delete(key: string): void;
  clear(): void;
};

export function createAsyncCache<V>(maxEntries = 10_000): AsyncCache<V> {
  const entries = new Map<string, Promise<V>>();
  let generation = 0;
  return {
    get(key, load) {
      const hit = entries.get(key);
      if (hit) return hit;
      const gen = generation;
      const p = load();
      // Bounded: a flood of distinct keys empties the cache instead of growing it.
      if (entries.size >= maxEntries) entries.clear();
      entries.set(key, p);
      const drop = () => { if (entries.get(key) === p) entries.delete(key); };
      p.then(() => { if (gen !== generation) drop(); }, drop);
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
