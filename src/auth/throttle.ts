/**
 * Failed-login throttle: fixed windows counted in the store's kv area (shared by every
 * process on one Redis). Two counters per failure: user+address (small limit: guessing one
 * account) and address alone (larger limit: spraying many accounts). Each attempt is counted
 * as a failure before its password is checked (one increment each, atomic in the store), so
 * attempts sent together cannot all pass a check made before any of them failed; a success
 * then gives its count back (clears the user+address counter, takes one off the address's).
 * While either counter is past its limit, login answers 429 without looking at the password,
 * with Retry-After set to the window.
 */
import { ApiError } from '../lib/errors.js';
import { kvPrefix } from '../store/keys.js';
import type { Store } from '../store/store.js';

export type ThrottleOptions = {
  /** Failures allowed per user and client address in one window. Default 5. */
  perUser: number;
  /** Failures allowed per client address (any user) in one window. Default 20. */
  perAddress: number;
  /** Window length in seconds. Default 300 (5 minutes). */
  windowSeconds: number;
};

export const defaultThrottle: ThrottleOptions = { perUser: 5, perAddress: 20, windowSeconds: 300 };

export type Throttle = {
  /** Counts an attempt as failed; throws 429 too-many-requests when this user or address has failed too often. */
  attempt(user: string, address: string): Promise<void>;
  /** The attempt succeeded: its count is given back. */
  succeeded(user: string, address: string): Promise<void>;
};

export function createThrottle(store: Store, opts: ThrottleOptions = defaultThrottle): Throttle {
  for (const [k, v] of Object.entries(opts)) {
    if (!Number.isInteger(v) || v < 1)
      throw new RangeError(`throttle option ${k} must be a positive integer, got ${v}`);
  }
  const userKey = (user: string, address: string) => `${kvPrefix.throttle}${user}|${address}`;
  const addressKey = (address: string) => `${kvPrefix.throttle}|${address}`;
  const ttlMs = opts.windowSeconds * 1000;

  return {
    async attempt(user, address) {
      const [u, a] = await Promise.all([
        store.kvIncr(userKey(user, address), 1, ttlMs),
        store.kvIncr(addressKey(address), 1, ttlMs),
      ]);
      if (u > opts.perUser || a > opts.perAddress) {
        const who = u > opts.perUser ? 'this user from this address' : 'this address';
        throw new ApiError(
          'too-many-requests',
          `Cannot log in: too many failed logins for ${who}; wait ${opts.windowSeconds} seconds`,
          {
            code: 'login-throttled',
            path: '/v1/login',
            'retry-after': opts.windowSeconds,
          },
          { headers: { 'Retry-After': String(opts.windowSeconds) } },
        );
      }
    },
    async succeeded(user, address) {
      await Promise.all([store.kvDel(userKey(user, address)), store.kvIncr(addressKey(address), -1, ttlMs)]);
    },
  };
}
