/** Freezes a value and everything in it: shared read-only values cannot be changed by a reader. */
export function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const x of Object.values(v)) deepFreeze(x);
  }
  if (typeof v === 'object' && v !== null) frozenRoots.add(v);
  return v;
}

const frozenRoots = new WeakSet<object>();

/** Whether `v` went through deepFreeze: nothing in it can ever change (so its encoding can be kept). */
export function isDeepFrozen(v: unknown): boolean {
  return typeof v === 'object' && v !== null && frozenRoots.has(v);
}
