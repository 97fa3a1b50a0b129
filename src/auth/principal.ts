/**
 * Who is calling: the Principal built from a token, with the caller's policies compiled once
 * (cached per tenant and policy list, dropped when a user, policy or tenant object changes)
 * and the set of tenants it reaches (its own and every subtenant below it).
 */
import { configKey, splitKey } from '../store/keys.js';
import type { Store } from '../store/store.js';
import { createAsyncCache } from './cache.js';
import { adminPolicy, adminPolicyName, compilePolicies, type CompiledPolicies } from './policies.js';
import type { TenantTree } from './tenants.js';
import { tenantsPath } from './tenants.js';
import { policiesPath, readUser, usersPath, type UserRecord } from './users.js';

export type Principal = {
  user: string;
  tenant: string;
  /** Hex SHA-256 of the bearer token (never the token itself). */
  tokenId: string;
  /** Milliseconds since the epoch. */
  expires: number;
  policies: CompiledPolicies;
  /** The principal's tenant and every tenant below it. */
  tenants: ReadonlySet<string>;
};

/**
 * What a principal may do, as text: equal for two principals of one token exactly when they
 * reach the same tenants with the same rules (a watch stream ends when it changes).
 */
export function permissionsOf(p: Principal): string {
  const rules = p.policies.rules.map(
    (r) => `${r.origin} ${r.effect} ${[...r.operations].sort().join(',')} ${r.pattern.source}`,
  );
  return JSON.stringify([p.user, p.tenant, [...p.tenants].sort(), p.policies.invalid, rules]);
}

export type Directory = {
  user(tenant: string, name: string): Promise<UserRecord | undefined>;
  policies(tenant: string, names: readonly string[]): Promise<CompiledPolicies>;
  reach(tenant: string): Promise<ReadonlySet<string>>;
  /** Drops what `keys` (store keys just committed) may have made stale; also run on store changes. */
  invalidate(keys: readonly string[]): void;
  /** Stops listening to store changes. */
  close(): void;
};

export function createDirectory(store: Store, tenants: TenantTree, now: () => number = Date.now): Directory {
  const users = createAsyncCache<UserRecord | undefined>({ now });
  const compiled = createAsyncCache<CompiledPolicies>({ now });
  const reaches = createAsyncCache<ReadonlySet<string>>({ now });

  // Every commit's keys come here (most are neither users, policies nor tenants): a key
  // outside those lists is passed over without splitting it.
  const lists = [usersPath, policiesPath, tenantsPath];
  const mayConcern = (key: string) => lists.some((l) => key.includes(l));
  const invalidate = (keys: readonly string[]) => {
    for (const key of keys) {
      if (!mayConcern(key)) continue;
      const { path } = splitKey(key);
      if (path.startsWith(usersPath + '/')) users.delete(key);
      // A user's policy list changed too: compiled sets are keyed by names, so only policy
      // objects themselves invalidate them.
      if (path.startsWith(policiesPath + '/') || path === policiesPath) compiled.clear();
      if (path.startsWith(tenantsPath + '/') || path === tenantsPath) {
        tenants.invalidate();
        reaches.clear();
      }
    }
  };
  // Other processes' commits arrive here; this process's own are also invalidated at once
  // by the write path (Auth.invalidate), so a request never sees its predecessor's stale view.
  const unsubscribe = store.onChange(invalidate);

  return {
    user(tenant, name) {
      const key = configKey(tenant, `${usersPath}/${name}`);
      return users.get(key, async () => readUser(name, (await store.get(key))?.value));
    },
    policies(tenant, names) {
      const sorted = [...new Set(names)].sort();
      return compiled.get(`${tenant}|${sorted.join(',')}`, async () => {
        const named = await Promise.all(
          sorted.map(async (name) => ({
            name,
            // The built-in admin policy cannot be redefined: a stored one would risk a lock-out.
            value:
              name === adminPolicyName
                ? adminPolicy
                : (await store.get(configKey(tenant, `${policiesPath}/${name}`)))?.value,
          })),
        );
        return compilePolicies(named);
      });
    },
    reach(tenant) {
      return reaches.get(tenant, async () => new Set([tenant, ...(await tenants.descendants(tenant))]));
    },
    invalidate,
    close: unsubscribe,
  };
}
