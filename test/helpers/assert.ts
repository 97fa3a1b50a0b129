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

/** One entry of an error body as the wire has it (CONTRACT §5): the code as a string, details apart. */
export type WireError = { 'error-message': string; 'error-info': string; 'error-details'?: Record<string, unknown> };

/** The entries of an error body, each checked to have the contract's shape. */
export function wireErrors(body: unknown): WireError[] {
  const errors = (body as { errors?: unknown } | null | undefined)?.errors;
  assert.ok(Array.isArray(errors) && errors.length > 0, `not an error body: ${JSON.stringify(body)}`);
  for (const e of errors as Array<Record<string, unknown>>) {
    assert.type(e['error-message'], 'string', `error-message of ${JSON.stringify(e)}`);
    assert.type(e['error-info'], 'string', `error-info of ${JSON.stringify(e)}`);
    const d = e['error-details'];
    if (d !== undefined) assert.ok(d !== null && typeof d === 'object' && !Array.isArray(d), 'error-details');
    for (const k of Object.keys(e))
      assert.ok(['error-message', 'error-info', 'error-details'].includes(k), `unexpected member ${k}`);
  }
  return errors as WireError[];
}

/** An entry's code and details as one record `{code, ...details}`, to assert on both at once. */
export function problemOf(e: WireError | undefined): { code?: string; [key: string]: unknown } {
  return e ? { ...e['error-details'], code: e['error-info'] } : {};
}

/** The first problem of an error body as `{code, ...details}` (the body's shape checked). */
export function firstProblem(body: unknown): { code?: string; [key: string]: unknown } {
  return problemOf(wireErrors(body)[0]);
}
