/**
 * A Map that cannot grow without bound: when it is full, adding a new key first forgets
 * everything (then `onFull` runs). Every cache of derived values uses it (compiled
 * expressions, resolved paths, principals, store reads): a flood of distinct keys then costs
 * a refill, never memory. Replacing the value of a key that is present never clears.
 */
export class BoundedMap<K, V> extends Map<K, V> {
  constructor(
    readonly maxEntries: number,
    private readonly onFull?: () => void,
  ) {
    super();
  }

  override set(key: K, value: V): this {
    if (this.size >= this.maxEntries && !this.has(key)) {
      this.clear();
      this.onFull?.();
    }
    return super.set(key, value);
  }
}
