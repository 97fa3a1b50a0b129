/**
 * Users are configuration objects at `/v1/config/system/users/<name>` of their tenant:
 * `{name, password?, policies?: [name...]}`. `password` is write-only: it is replaced by
 * `password-hash` (scrypt) before the object reaches the store, and `password-hash` is
 * never returned: both are the user resource's storage form (resources/user.ts). Here: a
 * stored user read for login.
 */
import { isObject } from '../lib/json.js';
import { isPasswordHash } from '../secrets/passwords.js';
import { passwordHashField, user } from '../resources/user.js';
import { policy } from '../resources/policy/index.js';

export const usersPath = user.pathOf();
export const policiesPath = policy.pathOf();

export type UserRecord = { name: string; passwordHash: string | undefined; policies: string[] };

export function readUser(name: string, value: unknown): UserRecord | undefined {
  if (!isObject(value)) return undefined;
  const hash = value[passwordHashField];
  const policies = Array.isArray(value.policies)
    ? value.policies.filter((p): p is string => typeof p === 'string')
    : [];
  return { name, passwordHash: isPasswordHash(hash) ? hash : undefined, policies };
}
