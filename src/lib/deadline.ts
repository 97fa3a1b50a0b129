/**
 * Waits for `p`, at most `ms`: true when it settled in time (resolved or rejected). For what may
 * never end while Redis is unreachable (a stop's last writes, a client's polite close).
 */
export async function withDeadline(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const settled = p.then(
    () => true,
    () => true,
  );
  const ok = await Promise.race([settled, new Promise<boolean>((resolve) => (timer = setTimeout(resolve, ms, false)))]);
  clearTimeout(timer);
  return ok;
}

/**
 * How long a Redis command may go unanswered once written before the request that waits for it
 * is answered 503: a Redis that takes commands and never answers (stopped, a network partition
 * without a reset) looks connected, so without a bound every request would be held until TCP
 * gives up, minutes later.
 */
export const redisAnswerMs = 10_000;

/** `p`, or a rejection with `${what} within N s` when it takes longer than `ms` (`p` goes on, unheard). */
export async function answerWithin<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} within ${ms / 1000} s`)), ms);
    timer.unref?.();
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}
