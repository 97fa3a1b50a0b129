/**
 * Retry timing of failing POSTs: capped exponential back-off with jitter from
 * `retry-interval` (default 1s) to `max-retry-interval` (default 60s); a `Retry-After`
 * header (seconds or an HTTP date) replaces the computed delay, capped at the maximum.
 */

import type { RetryPolicy } from '../resources/webhook/spec.js';
import { backoffDelay } from '../lib/backoff.js';

/** Delay before attempt `attempt + 1` (attempt counts from 1): base·2^(attempt-1), capped, ±20 % jitter. */
export function backoffMs(policy: RetryPolicy, attempt: number, random: () => number = Math.random): number {
  // Jitter spreads retries of many exporters hitting the same broken endpoint.
  const wait = backoffDelay(attempt - 1, { baseMs: policy.baseMs, maxMs: policy.maxMs, jitter: 0.2 }, random);
  return Math.min(Math.round(wait), policy.maxMs);
}

/** Retry-After as milliseconds from `now`, or undefined when absent or unreadable. */
export function retryAfterMs(header: string | undefined, now: number): number | undefined {
  if (header === undefined) return undefined;
  const text = header.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  // Else an HTTP-date, which starts with the day's name (RFC 9110 5.6.7: IMF-fixdate and the two
  // obsolete forms); `-5` or `1.5` are neither (Date.parse would read them as dates long past).
  if (!/^[A-Za-z]{3}/.test(text)) return undefined;
  const at = Date.parse(text);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
}

/** The wait before the next attempt: Retry-After when given, else back-off; never above maxMs. */
export function nextDelayMs(
  policy: RetryPolicy,
  attempt: number,
  retryAfter: number | undefined,
  random?: () => number,
): number {
  if (retryAfter !== undefined) return Math.min(retryAfter, policy.maxMs);
  return backoffMs(policy, attempt, random);
}

/** True when another attempt is allowed after `attempt` failed ones. */
export function mayRetry(policy: RetryPolicy, attempt: number): boolean {
  return policy.tries === 0 || attempt < policy.tries;
}
