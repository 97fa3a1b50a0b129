/**
 * createAuth: login, bearer authentication, token refresh and authorization decisions,
 * built on the Store (kv area for tokens and throttles, config objects for users, policies
 * and tenants). Time is injectable so tests expire tokens without sleeping.
 */
import { ApiError, type DetailFor } from '../lib/errors.js';
import type { JsonObject } from '../lib/json.js';
import type { Settings } from '../lib/settings.js';
import type { Store } from '../store/store.js';
import { record, type AuditEvent, type AuditSink } from './audit.js';
import { bootstrapAdmin } from './bootstrap.js';
import { verifyPassword } from '../secrets/passwords.js';
import type { Operation } from './policies.js';
import { createDecisions } from './decisions.js';
import { createDirectory, type Directory, type Principal } from './principal.js';
import { createTenantTree, type TenantTree } from './tenants.js';
import { createThrottle, defaultThrottle, type Throttle, type ThrottleOptions } from './throttle.js';
import {
  credentialOf,
  issueToken,
  lookupToken,
  looksLikeToken,
  revokeStaleTokens,
  revokeToken,
  tokenId,
  type TokenReply,
} from './tokens.js';
import { prepareUserForStore, user } from '../resources/user.js';
import { policy } from '../resources/policy/index.js';
import { tenant as tenantResource } from '../resources/tenant.js';
import { anyKeyOf } from '../resources/paths.js';
import { BoundedMap } from '../lib/bounded-cache.js';
import { bearerToken } from '../lib/bearer.js';
import { readUser } from './users.js';
import { log } from '../lib/log.js';
import { errorText } from '../lib/error-text.js';

export type AuthOptions = {
  settings: Pick<Settings, 'tenant' | 'tokenTtlSeconds' | 'adminPassword'>;
  store: Store;
  audit: AuditSink;
  now?: () => number;
  throttle?: ThrottleOptions;
  /** Receives the one line announcing a generated admin password (default: stdout). */
  announce?: (line: string) => void;
};

export type Auth = {
  readonly tenants: TenantTree;
  /** 401 unauthorized on a wrong user or password, 429 too-many-requests when throttled. */
  login(username: string, password: string, clientAddr: string): Promise<TokenReply>;
  /** The principal of a recently authenticated header, without waiting (undefined: call authenticate). */
  cachedPrincipal(authorizationHeader: string | undefined): Principal | undefined;
  /** The principal of an `Authorization: Bearer <token>` header, or 401. */
  authenticate(authorizationHeader: string | undefined): Promise<Principal>;
  /** A new token for the same user (the old one stops working), or 401 if it already has. */
  refresh(principal: Principal): Promise<TokenReply>;
  /**
   * 403 forbidden unless the principal's policies allow `op` on `absolutePath`
   * (`/v1/config/...`, relative to the tenant tree). With `tenant` (the owner of the object
   * when it is not the principal's own tenant): 404 not-found unless that tenant is the
   * principal's or below it.
   */
  authorize(principal: Principal, absolutePath: string, op: Operation, tenant?: string): void;
  /** The same decision without throwing, for filtering multi-object reads. */
  allows(principal: Principal, absolutePath: string, op: Operation, tenant?: string): boolean;
  bootstrap(): Promise<void>;
  prepareUserForStore(obj: JsonObject, previous?: JsonObject): Promise<JsonObject>;
  /** Records an audit event; never throws. */
  audit(event: AuditEvent): Promise<void>;
  /** Drops cached users, policies and tenant reach made stale by a commit of these store keys. */
  invalidate(keys: readonly string[]): void;
  /** Stops listening to store changes. */
  close(): void;
};

/** `name` or `name@tenant`: no '/', '|', spaces or control characters can reach a store key. */
const usernameForm = /^([A-Za-z0-9][A-Za-z0-9._-]{0,127})(?:@([A-Za-z0-9][A-Za-z0-9._-]{0,127}))?$/;

const PRINCIPAL_CACHE_MS = 1000;

function unauthorized(message: string, code: DetailFor<'unauthorized'>): ApiError {
  return new ApiError(
    'unauthorized',
    message,
    { code },
    { headers: { 'WWW-Authenticate': `Bearer error="invalid_token"` } },
  );
}

export function createAuth(opts: AuthOptions): Auth {
  const { settings, store } = opts;
  const now = opts.now ?? Date.now;
  const root = settings.tenant;
  const tenants = createTenantTree(store, root, now);
  const directory = createDirectory(store, tenants, now);
  const audit = (event: AuditEvent) => record(opts.audit, event);
  const parts: AuthParts = { store, settings, now, root, tenants, directory, audit };
  const login = createLogin(parts, createThrottle(store, opts.throttle ?? defaultThrottle));
  const verify = tokenVerifier(parts);
  const principals = principalCache(store, now);
  const stopRevoking = store.onChange((keys) => {
    const users = keys.filter((k) => user.parseKey(k) !== undefined);
    if (users.length > 0) void revokeForUsers(store, users);
  });

  async function authenticate(header: string | undefined): Promise<Principal> {
    const hit = principals.get(header);
    if (hit) return hit;
    const principal = await verify(header);
    principals.set(header as string, principal);
    return principal;
  }

  async function refresh(principal: Principal): Promise<TokenReply> {
    const rec = await lookupToken(store, principal.tokenId, now());
    if (!rec) throw unauthorized('Cannot refresh the token: it is unknown or expired; log in again', 'invalid-token');
    const issued = await issueToken(
      store,
      { user: rec.user, tenant: rec.tenant, credential: rec.credential },
      now(),
      settings.tokenTtlSeconds,
    );
    await revokeToken(store, principal.tokenId);
    principals.forget();
    const { id: _id, ...reply } = issued;
    return reply;
  }

  const check = createDecisions(root);

  return {
    tenants,
    login,
    authenticate,
    cachedPrincipal: principals.get,
    refresh,
    authorize(principal, absolutePath, op, tenant) {
      const err = check(principal, absolutePath, op, tenant);
      if (err) throw err;
    },
    allows: (principal, absolutePath, op, tenant) => check(principal, absolutePath, op, tenant) === undefined,
    bootstrap: () =>
      bootstrapAdmin({
        store,
        rootTenant: root,
        adminPassword: settings.adminPassword,
        now,
        ...(opts.announce ? { announce: opts.announce } : {}),
      }),
    prepareUserForStore,
    audit,
    invalidate(keys) {
      directory.invalidate(keys);
      principals.invalidate(keys);
    },
    close() {
      stopRevoking();
      principals.close();
      directory.close();
    },
  };
}

/**
 * User objects changed: the tokens they no longer back (deleted, or the password changed) are
 * deleted, so that no later write (a rollback restoring a user as it was) brings them back. One
 * scan of the live tokens for every user of the notification (after a Redis outage it names them all).
 */
async function revokeForUsers(store: Store, keys: readonly string[]): Promise<void> {
  try {
    const now = new Map<string, string | undefined>();
    for (const key of keys) {
      const parts = user.parseKey(key);
      if (!parts?.name) continue;
      const rec = readUser(parts.name, (await store.get(key))?.value);
      now.set(`${parts.tenant}/${parts.name}`, rec?.passwordHash ? credentialOf(rec.passwordHash) : undefined);
    }
    const n = await revokeStaleTokens(store, now);
    if (n > 0) log('info', 'tokens revoked', { users: now.size, tokens: n });
  } catch (err) {
    // Each token is refused anyway while its user differs (tokenVerifier): only a rollback could revive it.
    log('warn', 'cannot revoke the tokens of changed users', { error: errorText(err) });
  }
}

/** What the parts of createAuth share. */
type AuthParts = {
  store: Store;
  settings: AuthOptions['settings'];
  now: () => number;
  root: string;
  tenants: TenantTree;
  directory: Directory;
  audit: (event: AuditEvent) => Promise<void>;
};

/** POST /v1/login: throttled, audited, a token for a user whose password matches. */
function createLogin(
  { store, settings, now, root, tenants, directory, audit }: AuthParts,
  throttle: Throttle,
): Auth['login'] {
  const loginEvent = (user: string | null, tenant: string | null, status: number, addr: string): AuditEvent => ({
    user,
    tenant,
    method: 'POST',
    path: '/v1/login',
    status,
    time: new Date(now()).toISOString(),
    'client-address': addr,
  });

  async function login(username: string, password: string, clientAddr: string): Promise<TokenReply> {
    const m = usernameForm.exec(username);
    const name = m?.[1];
    const tenant = m?.[2] ?? root;
    // Throttle key: the name as typed (bounded by usernameForm) or a fixed marker for junk.
    const who = name ? `${tenant}/${name}` : '-';
    try {
      await throttle.attempt(who, clientAddr);
    } catch (err) {
      // A throttled login is audited; the store unreachable (503) is no login attempt.
      if (err instanceof ApiError && err.code === 'too-many-requests')
        await audit(loginEvent(name ?? null, name ? tenant : null, 429, clientAddr));
      throw err;
    }
    const user = name && (await tenants.exists(tenant)) ? await directory.user(tenant, name) : undefined;
    const ok = await verifyPassword(password, user?.passwordHash);
    if (!ok || !user?.passwordHash || !name) {
      await audit(loginEvent(name ?? null, name ? tenant : null, 401, clientAddr));
      throw new ApiError('unauthorized', 'Cannot log in: unknown user or wrong password', {
        code: 'bad-credentials',
        path: '/v1/login',
      });
    }
    await throttle.succeeded(who, clientAddr);
    const issued = await issueToken(
      store,
      { user: name, tenant, credential: credentialOf(user.passwordHash) },
      now(),
      settings.tokenTtlSeconds,
    );
    await audit(loginEvent(name, tenant, 200, clientAddr));
    const { id: _id, ...reply } = issued;
    return reply;
  }
  return login;
}

/**
 * Principals of recently seen tokens, so a busy client costs no token lookup per request.
 * An entry lives PRINCIPAL_CACHE_MS at most (and never past the token's expiry); every
 * change of a user, policy or tenant, and every refresh in this process, clears them all.
 * A token revoked by another process can so be accepted here for up to that long.
 */
function principalCache(store: Store, now: () => number) {
  const principals = new BoundedMap<string, { principal: Principal; until: number }>(10_000);
  const forget = () => principals.clear();
  const identityKey = anyKeyOf([user, policy, tenantResource]);
  const unsubscribe = store.onChange((keys) => {
    if (keys.some(identityKey)) forget();
  });
  return {
    get(header: string | undefined): Principal | undefined {
      const cached = header === undefined ? undefined : principals.get(header);
      if (!cached) return undefined;
      if (cached.until > now()) return cached.principal;
      principals.delete(header as string);
      return undefined;
    },
    set(header: string, principal: Principal): void {
      principals.set(header, { principal, until: Math.min(now() + PRINCIPAL_CACHE_MS, principal.expires) });
    },
    forget,
    invalidate(keys: readonly string[]): void {
      if (keys.some(identityKey)) forget();
    },
    close: unsubscribe,
  };
}

/** The principal of an Authorization header: a token this server issued, whose user still is as it was. */
function tokenVerifier({ store, now, tenants, directory }: AuthParts) {
  return async function verify(header: string | undefined): Promise<Principal> {
    if (header === undefined || header.trim() === '')
      throw unauthorized(
        'Cannot authenticate: send Authorization: Bearer <token> (POST /v1/login gives one)',
        'missing-token',
      );
    const token = bearerToken(header);
    if (token === undefined)
      throw unauthorized('Cannot authenticate: the Authorization header must be Bearer <token>', 'bad-authorization');
    if (!looksLikeToken(token))
      throw unauthorized('Cannot authenticate: the token is not one this server issued; log in again', 'invalid-token');
    const id = tokenId(token);
    const rec = await lookupToken(store, id, now());
    if (!rec) throw unauthorized('Cannot authenticate: the token is unknown or expired; log in again', 'invalid-token');
    // The user, its tenant and its password must still be what they were at login.
    const user = (await tenants.exists(rec.tenant)) ? await directory.user(rec.tenant, rec.user) : undefined;
    if (!user?.passwordHash || credentialOf(user.passwordHash) !== rec.credential) {
      // Gone for good: a rollback that restores the user as it was must not revive it.
      await revokeToken(store, id).catch(() => undefined);
      throw unauthorized(
        "Cannot authenticate: the token's user, tenant or password has changed; log in again",
        'invalid-token',
      );
    }
    const [policies, reach] = await Promise.all([
      directory.policies(rec.tenant, user.policies),
      directory.reach(rec.tenant),
    ]);
    return { user: rec.user, tenant: rec.tenant, tokenId: id, expires: rec.expires, policies, tenants: reach };
  };
}
