/** Small helpers of the checks: thrown ApiErrors collected into a list. */
import { ApiError } from '../lib/errors.js';

/** Runs `fn`; an ApiError it throws becomes the one problem returned. */
export async function collectProblems(fn: () => Promise<unknown>): Promise<ApiError[]> {
  try {
    await fn();
    return [];
  } catch (err) {
    if (err instanceof ApiError) return [err];
    throw err;
  }
}

/** Runs `fn` and turns a thrown ApiError into a list entry, adding x-path and the field. */
export function attempt(out: ApiError[], xPath: string, field: string, fn: () => void): void {
  try {
    fn();
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    out.push(
      err.rewrap(`${err.message} (${xPath})`, {
        path: err.info?.path ?? field,
        'x-path': xPath,
      }),
    );
  }
}
