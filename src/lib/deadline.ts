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
