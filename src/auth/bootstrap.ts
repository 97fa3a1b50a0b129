/**
 * The bootstrap admin: user `admin` of the root tenant with the built-in
 * `admin` policy. With ADMIN_PASSWORD set, that is admin's password at every start (the
 * stored hash is rewritten only when it does not match). Without it, a first start
 * generates a password, stores its hash and prints it once: the only place a password is
 * ever written to a log. Several processes starting together race on an insert-if-absent
 * commit, so exactly one of them prints.
 */
import { configKey } from '../store/keys.js';
import type { JsonObject } from '../lib/json.js';
import type { Store } from '../store/store.js';
import { generatePassword, hashPassword, verifyPassword } from './passwords.js';
import { adminPolicyName } from './policies.js';
import { passwordHashField, readUser, usersPath } from './users.js';

export const adminUser = 'admin';

export type BootstrapOptions = {
  store: Store;
  rootTenant: string;
  adminPassword: string | undefined;
  /** Where the generated password goes: one JSON log line on stdout by default. */
  announce?: (line: string) => void;
  now?: () => number;
};

const maxAttempts = 5;

export async function bootstrapAdmin(opts: BootstrapOptions): Promise<void> {
  const key = configKey(opts.rootTenant, `${usersPath}/${adminUser}`);
  const announce =
    opts.announce ??
    ((line: string) => {
      process.stdout.write(line + '\n');
    });
  const now = opts.now ?? Date.now;
  for (let attempt = 0; attempt < maxAttempts; attempt++) {
    const existing = await opts.store.get(key);
    if (opts.adminPassword === undefined) {
      if (existing) return;
      const password = generatePassword();
      const value: JsonObject = {
        name: adminUser,
        policies: [adminPolicyName],
        [passwordHashField]: await hashPassword(password),
      };
      const res = await opts.store.commit([{ op: 'put', key, value, expect: null }]);
      if (!res.ok) return; // another process created admin first; it printed the password.
      // Written directly, not through log(): it must appear whatever LOG_LEVEL says.
      announce(
        JSON.stringify({
          time: new Date(now()).toISOString(),
          level: 'warn',
          msg: 'generated a password for user admin: it is shown only this once; set ADMIN_PASSWORD to choose it',
          user: adminUser,
          password,
        }),
      );
      return;
    }
    const user = existing ? readUser(adminUser, existing.value) : undefined;
    const hasPolicy = user?.policies.includes(adminPolicyName) ?? false;
    if (user && hasPolicy && (await verifyPassword(opts.adminPassword, user.passwordHash))) return;
    const value: JsonObject = {
      ...existing?.value,
      name: adminUser,
      policies: [...new Set([...(user?.policies ?? []), adminPolicyName])],
      [passwordHashField]: await hashPassword(opts.adminPassword),
    };
    const res = await opts.store.commit([{ op: 'put', key, value, expect: existing ? existing.etag : null }]);
    if (res.ok) return;
  }
  throw new Error(`bootstrap: could not write user ${adminUser} after ${maxAttempts} attempts (concurrent changes)`);
}
