import * as assert from 'uvu/assert';

/** uvu's assert.throws is synchronous; this is the async counterpart. Returns the error. */
export async function rejects(fn: () => Promise<unknown>, check?: (err: unknown) => boolean, msg?: string): Promise<unknown> {
  try {
    await fn();
  } catch (err) {
    if (check) assert.ok(check(err), msg ?? `unexpected error: ${String(err)}`);
    return err;
  }
  assert.unreachable(msg ?? 'expected a rejection');
  return undefined;
}
