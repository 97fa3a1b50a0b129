/**
 * The back-off of every retry loop, written once: the wait before retry `attempt` (counted from
 * 0) has the ceiling min(maxMs, baseMs × 2^attempt), and a jitter draws it around or under that
 * ceiling so that many parties failing together (exporters on one broken endpoint, sites cut off
 * by a control-plane restart, writers conflicting on one object) do not retry at one instant.
 *
 * - `none`: the ceiling (a single waiter: start-up waiting for Redis, reconnects of a client)
 * - `full`: anywhere in [0, ceiling] (short contention waits)
 * - `equal`: [ceiling/2, ceiling] (never retries at once, still spread)
 * - a number p: ceiling × [1 − p, 1 + p], never above maxMs (the webhook retry's ±20 %)
 */
export type Backoff = { baseMs: number; maxMs: number; jitter?: 'none' | 'full' | 'equal' | number };

export function backoffDelay(attempt: number, b: Backoff, random: () => number = Math.random): number {
  const ceiling = Math.min(b.maxMs, b.baseMs * 2 ** Math.min(Math.max(0, attempt), 30));
  const jitter = b.jitter ?? 'none';
  if (jitter === 'none') return ceiling;
  if (jitter === 'full') return random() * ceiling;
  if (jitter === 'equal') return ceiling / 2 + (random() * ceiling) / 2;
  return Math.max(0, Math.min(ceiling * (1 - jitter + 2 * jitter * random()), b.maxMs));
}
