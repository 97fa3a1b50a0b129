/**
 * The next version of a large read-only map in which a few values changed, without a copy:
 * `base` with some of its values replaced (`top`; a value is never undefined). It has exactly `base`'s keys, in `base`'s
 * order. A configuration snapshot of 10,000 objects, read again after each commit, was two
 * copies of 10,000 entries a read (the values and their ETags), for a commit that changed one.
 */
export class LayeredMap<K, V> implements ReadonlyMap<K, V> {
  private constructor(
    private readonly base: ReadonlyMap<K, V>,
    private readonly top: ReadonlyMap<K, V>,
  ) {}

  /**
   * `prev` with the values of `changes` (each key already in `prev`). Layers share `prev`'s
   * base; once the replaced values pass a sixteenth of it, the result is a plain map again.
   */
  static replacing<K, V>(prev: ReadonlyMap<K, V>, changes: ReadonlyMap<K, V>): ReadonlyMap<K, V> {
    const layered = prev instanceof LayeredMap;
    const base: ReadonlyMap<K, V> = layered ? (prev as LayeredMap<K, V>).base : prev;
    const top = new Map(layered ? (prev as LayeredMap<K, V>).top : undefined);
    for (const [k, v] of changes) top.set(k, v);
    if (top.size <= 64 + base.size / 16) return new LayeredMap(base, top);
    const flat = new Map(base);
    for (const [k, v] of top) flat.set(k, v);
    return flat;
  }

  get size(): number {
    return this.base.size;
  }
  has(key: K): boolean {
    return this.base.has(key);
  }
  get(key: K): V | undefined {
    const v = this.top.get(key);
    return v === undefined ? this.base.get(key) : v;
  }
  forEach(fn: (value: V, key: K, map: ReadonlyMap<K, V>) => void, thisArg?: unknown): void {
    for (const [k, v] of this) fn.call(thisArg, v, k, this);
  }
  *entries(): MapIterator<[K, V]> {
    const top = this.top;
    for (const [k, v] of this.base) {
      const t = top.get(k);
      yield [k, t === undefined ? v : t];
    }
  }
  keys(): MapIterator<K> {
    return this.base.keys();
  }
  *values(): MapIterator<V> {
    for (const [, v] of this.entries()) yield v;
  }
  [Symbol.iterator](): MapIterator<[K, V]> {
    return this.entries();
  }
}
