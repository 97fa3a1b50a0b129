/** Objects deepFreeze has frozen whole: nothing in them can ever change. */
const deepFrozen = new WeakSet<object>();

/** Freezes a value and everything in it: shared read-only values cannot be changed by a reader. */
export function deepFreeze<T>(v: T): T {
  if (typeof v !== 'object' || v === null || deepFrozen.has(v)) return v;
  Object.freeze(v);
  // Also below an object someone froze shallowly: only a whole frozen tree is recorded.
  for (const x of Object.values(v)) deepFreeze(x);
  deepFrozen.add(v);
  return v;
}

/** Whether `v` went through deepFreeze, so its encoding can be kept (api/reply.ts). */
export function isDeepFrozen(v: unknown): boolean {
  return typeof v === 'object' && v !== null && deepFrozen.has(v);
}
