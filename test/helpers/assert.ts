import { ApiError, type ErrorCode } from '../../src/lib/errors.js';
import * as assert from 'uvu/assert';

/** uvu's assert.throws is synchronous; this is the async counterpart. Returns the error. */
export async function rejects(
  fn: () => Promise<unknown>,
  check?: (err: unknown) => boolean,
  msg?: string,
): Promise<unknown> {
  try {
    await fn();
  } catch (err) {
    if (check) assert.ok(check(err), msg ?? `unexpected error: ${String(err)}`);
    return err;
  }
  assert.unreachable(msg ?? 'expected a rejection');
  return undefined;
}

/** Asserts that `fn` throws an ApiError with this code and these error-info members; returns it. */
export function expectApiError(fn: () => unknown, code: ErrorCode, info: Record<string, unknown>): ApiError {
  try {
    fn();
  } catch (err) {
    assert.instance(err, ApiError);
    const e = err as ApiError;
    assert.is(e.code, code);
    for (const [k, v] of Object.entries(info)) assert.equal(e.info?.[k], v, `error-info ${k}`);
    return e;
  }
  assert.unreachable('expected an ApiError');
  throw new Error('unreachable');
}
