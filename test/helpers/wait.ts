/**
 * The one polling helper of the tests: `eventually(check, what)` calls `check` until it gives a
 * value (anything but undefined, null or false) and returns that value. Bounded in count and
 * in time (never a hang): after `timeoutMs` it fails naming `what`. Waiting is not a timing
 * assertion: the bound is generous, and a passing check returns at once.
 */

export type EventuallyOptions = {
  /** Give up after this long (default 15 s). */
  timeoutMs?: number;
  /** Pause between two checks (default 25 ms). */
  everyMs?: number;
  /** A check that throws is tried again (a process restarting); the last error is named on failure. */
  retryErrors?: boolean;
};

export async function eventually<T>(
  check: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  what: string | (() => string),
  opts: EventuallyOptions | number = {},
): Promise<T> {
  const {
    timeoutMs = 15_000,
    everyMs = 25,
    retryErrors = false,
  } = typeof opts === 'number' ? { timeoutMs: opts } : opts;
  const deadline = Date.now() + timeoutMs;
  const maxChecks = Math.ceil(timeoutMs / Math.max(1, everyMs)) + 1;
  let lastError: unknown;
  for (let i = 0; i < maxChecks; i++) {
    try {
      const v = await check();
      if (v !== undefined && v !== null && v !== false) return v;
    } catch (err) {
      if (!retryErrors) throw err;
      lastError = err;
    }
    if (Date.now() > deadline) break;
    await sleep(everyMs);
  }
  const why =
    lastError === undefined
      ? ''
      : ` (last error: ${lastError instanceof Error ? lastError.message : String(lastError)})`;
  throw new Error(`never happened within ${timeoutMs} ms: ${typeof what === 'string' ? what : what()}${why}`);
}

/** A pause, for a test that paces its own actions (never to wait for a result: use eventually). */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
