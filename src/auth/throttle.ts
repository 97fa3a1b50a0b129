/**
 * Failed-login throttle: fixed windows counted in the store's kv area (shared by every
 * process on one Redis). Two counters per failure: user+address (small limit: guessing one
 * account) and address alone (larger limit: spraying many accounts). A success clears the
 * user+address counter. While either counter is at its limit, login answers 429 without
 * looking at the password, with Retry-After set to the window.
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
  /** Throws 429 too-many-requests when this user or address has failed too often. */
  check(user: string, address: string): Promise<void>;
  failed(user: string, address: string): Promise<void>;
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
  const count = async (key: string) => Number((await store.kvGet(key)) ?? 0) || 0;

  return {
    async check(user, address) {
      const [u, a] = await Promise.all([count(userKey(user, address)), count(addressKey(address))]);
      if (u >= opts.perUser || a >= opts.perAddress) {
        const who = u >= opts.perUser ? 'this user from this address' : 'this address';
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
    async failed(user, address) {
      await Promise.all([store.kvIncr(userKey(user, address), 1, ttlMs), store.kvIncr(addressKey(address), 1, ttlMs)]);
    },
    async succeeded(user, address) {
      await store.kvDel(userKey(user, address));
    },
  };
}
