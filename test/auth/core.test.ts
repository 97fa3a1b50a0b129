/**
 * createAuth against the embedded store: bootstrap, login, throttle, tokens (expiry with an
 * injected clock, refresh, revocation by password change or user deletion), policies
 * reloaded on change, and the audit events of logins.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createAuth, type Auth } from '../../src/auth/index.js';
import type { AuditEvent } from '../../src/auth/audit.js';
import type { Principal } from '../../src/auth/principal.js';
import { ApiError } from '../../src/lib/errors.js';
import type { JsonObject } from '../../src/lib/json.js';
import { openEmbeddedStore } from '../../src/store/embedded.js';
import type { Store } from '../../src/store/store.js';
import { rejects } from '../helpers/assert.js';
import { eventually } from '../helpers/wait.js';

const dirs: string[] = [];
process.once('exit', () => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

type Ctx = { dir: string; store: Store; auth: Auth; events: AuditEvent[]; announced: string[]; clock: { t: number } };

async function fresh(opts: { adminPassword?: string; dir?: string } = {}): Promise<Ctx> {
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), 'edgeplane-auth-'));
  if (!opts.dir) dirs.push(dir);
  const store = await openEmbeddedStore(dir);
  const events: AuditEvent[] = [];
  const announced: string[] = [];
  const clock = { t: Date.parse('2026-01-01T00:00:00Z') };
  const auth = createAuth({
    settings: { tenant: 'default', tokenTtlSeconds: 600, adminPassword: opts.adminPassword },
    store,
    audit: async (e) => {
      events.push(e);
    },
    now: () => clock.t,
    announce: (line) => announced.push(line),
  });
  await auth.bootstrap();
  return { dir, store, auth, events, announced, clock };
}

async function done(ctx: Ctx): Promise<void> {
  ctx.auth.close();
  await ctx.store.close();
}

const isCode = (code: string, infoCode?: string) => (err: unknown) =>
  err instanceof ApiError && err.code === code && (infoCode === undefined || err.info?.code === infoCode);

async function putUser(
  ctx: Ctx,
  tenant: string,
  name: string,
  fields: JsonObject,
  previous?: JsonObject,
): Promise<void> {
  const value = await ctx.auth.prepareUserForStore({ name, ...fields }, previous);
  const r = await ctx.store.commit([{ op: 'put', key: `${tenant}/system/users/${name}`, value }]);
  assert.ok(r.ok);
}

async function put(ctx: Ctx, key: string, value: JsonObject): Promise<void> {
  assert.ok((await ctx.store.commit([{ op: 'put', key, value }])).ok, `put ${key}`);
}

const bearer = (token: string) => `Bearer ${token}`;

test('bootstrap without ADMIN_PASSWORD: one generated password, printed once, stored hashed', async () => {
  const ctx = await fresh();
  assert.is(ctx.announced.length, 1);
  const line: unknown = JSON.parse(ctx.announced[0] ?? '');
  assert.ok(typeof line === 'object' && line !== null && 'password' in line && typeof line.password === 'string');
  const password = line.password;
  assert.ok(password.length >= 32);
  const stored = await ctx.store.get('default/system/users/admin');
  assert.equal(stored?.value.policies, ['admin']);
  assert.not.ok('password' in (stored?.value ?? {}));
  const reply = await ctx.auth.login('admin', password, '10.0.0.1');
  assert.match(reply.token, /^[A-Za-z0-9_-]{43}$/);
  await done(ctx);
  // A second start keeps the password and prints nothing.
  const again = await fresh({ dir: ctx.dir });
  assert.is(again.announced.length, 0);
  await again.auth.login('admin', password, '10.0.0.1');
  assert.not.ok(
    readFileSync(join(ctx.dir, 'store.aof'), 'utf8').includes(password),
    'password in clear in the store file',
  );
  await done(again);
});

test("ADMIN_PASSWORD is admin's password at every start; unchanged, it is not rewritten", async () => {
  const ctx = await fresh({ adminPassword: 'first-secret-pw' });
  assert.is(ctx.announced.length, 0);
  await ctx.auth.login('admin', 'first-secret-pw', 'a');
  const etag = (await ctx.store.get('default/system/users/admin'))?.etag;
  await done(ctx);
  const same = await fresh({ adminPassword: 'first-secret-pw', dir: ctx.dir });
  assert.is((await same.store.get('default/system/users/admin'))?.etag, etag);
  await done(same);
  const changed = await fresh({ adminPassword: 'second-secret-pw', dir: ctx.dir });
  await rejects(() => changed.auth.login('admin', 'first-secret-pw', 'a'), isCode('unauthorized', 'bad-credentials'));
  await changed.auth.login('admin', 'second-secret-pw', 'a');
  assert.not.ok(readFileSync(join(ctx.dir, 'store.aof'), 'utf8').includes('secret-pw'));
  await done(changed);
});

test('login: reply shape, 401 for wrong password and unknown user, audit without the password', async () => {
  const ctx = await fresh({ adminPassword: 'pw-admin-1' });
  const reply = await ctx.auth.login('admin', 'pw-admin-1', '10.1.1.1');
  assert.equal(Object.keys(reply).sort(), ['creation-time', 'expires', 'expires-in', 'token']);
  assert.is(reply['expires-in'], 600);
  assert.is(reply['creation-time'], '2026-01-01T00:00:00.000Z');
  assert.is(reply.expires, '2026-01-01T00:10:00.000Z');
  await rejects(() => ctx.auth.login('admin', 'wrong-pw-zz', '10.1.1.1'), isCode('unauthorized', 'bad-credentials'));
  await rejects(() => ctx.auth.login('nobody', 'wrong-pw-zz', '10.1.1.1'), isCode('unauthorized', 'bad-credentials'));
  await rejects(() => ctx.auth.login('../x', 'wrong-pw-zz', '10.1.1.1'), isCode('unauthorized', 'bad-credentials'));
  assert.equal(
    ctx.events.map((e) => [e.user, e.tenant, e.method, e.path, e.status, e['client-address']]),
    [
      ['admin', 'default', 'POST', '/v1/login', 200, '10.1.1.1'],
      ['admin', 'default', 'POST', '/v1/login', 401, '10.1.1.1'],
      ['nobody', 'default', 'POST', '/v1/login', 401, '10.1.1.1'],
      [null, null, 'POST', '/v1/login', 401, '10.1.1.1'],
    ],
  );
  const text = JSON.stringify(ctx.events);
  assert.not.ok(text.includes('pw-admin-1') || text.includes('wrong-pw-zz') || text.includes(reply.token));
  await done(ctx);
});

test('throttle: 5 failures per user and address give 429 with Retry-After, even with the right password', async () => {
  const ctx = await fresh({ adminPassword: 'pw-admin-2' });
  for (let i = 0; i < 5; i++)
    await rejects(() => ctx.auth.login('admin', 'nope-nope', '10.2.2.2'), isCode('unauthorized'));
  const err = await rejects(
    () => ctx.auth.login('admin', 'pw-admin-2', '10.2.2.2'),
    isCode('too-many-requests', 'login-throttled'),
  );
  assert.ok(err instanceof ApiError && err.status === 429 && Number(err.headers['Retry-After']) > 0);
  assert.is(ctx.events.at(-1)?.status, 429);
  // Another address is not affected; a success there clears only its own counter.
  await ctx.auth.login('admin', 'pw-admin-2', '10.3.3.3');
  await rejects(() => ctx.auth.login('admin', 'pw-admin-2', '10.2.2.2'), isCode('too-many-requests'));
  await done(ctx);
});

test('throttle: one address spraying many users is stopped too', async () => {
  const ctx = await fresh({ adminPassword: 'pw-admin-3' });
  for (let i = 0; i < 20; i++)
    await rejects(() => ctx.auth.login(`user${i}`, 'guess-guess', '10.4.4.4'), isCode('unauthorized'));
  await rejects(() => ctx.auth.login('admin', 'pw-admin-3', '10.4.4.4'), isCode('too-many-requests'));
  await done(ctx);
});

test('authenticate: missing, malformed, unknown and expired tokens are 401 with WWW-Authenticate', async () => {
  const ctx = await fresh({ adminPassword: 'pw-admin-4' });
  const { token } = await ctx.auth.login('admin', 'pw-admin-4', 'a');
  const p = await ctx.auth.authenticate(bearer(token));
  assert.equal([p.user, p.tenant, p.expires], ['admin', 'default', ctx.clock.t + 600_000]);
  assert.is.not(p.tokenId, token);
  const cases: Array<[string | undefined, string]> = [
    [undefined, 'missing-token'],
    ['', 'missing-token'],
    [`Basic ${token}`, 'bad-authorization'],
    ['Bearer', 'bad-authorization'],
    ['Bearer short', 'invalid-token'],
    [bearer('A'.repeat(43)), 'invalid-token'],
  ];
  for (const [header, code] of cases) {
    const err = await rejects(() => ctx.auth.authenticate(header), isCode('unauthorized', code), String(header));
    assert.ok(err instanceof ApiError && err.headers['WWW-Authenticate']?.startsWith('Bearer'));
  }
  ctx.clock.t += 600_000;
  await rejects(() => ctx.auth.authenticate(bearer(token)), isCode('unauthorized', 'invalid-token'));
  await done(ctx);
});

test('refresh: a new token with a new expiry; the old one stops working', async () => {
  const ctx = await fresh({ adminPassword: 'pw-admin-5' });
  const { token } = await ctx.auth.login('admin', 'pw-admin-5', 'a');
  const p = await ctx.auth.authenticate(bearer(token));
  ctx.clock.t += 300_000;
  const next = await ctx.auth.refresh(p);
  assert.is.not(next.token, token);
  assert.is(next.expires, new Date(ctx.clock.t + 600_000).toISOString());
  await rejects(() => ctx.auth.authenticate(bearer(token)), isCode('unauthorized'));
  await ctx.auth.authenticate(bearer(next.token));
  await rejects(() => ctx.auth.refresh(p), isCode('unauthorized'));
  await done(ctx);
});

test('a password change or a deleted user ends existing tokens', async () => {
  const ctx = await fresh({ adminPassword: 'pw-admin-6' });
  await putUser(ctx, 'default', 'alice', { password: 'alice-pw-1', policies: [] });
  const { token } = await ctx.auth.login('alice', 'alice-pw-1', 'a');
  await ctx.auth.authenticate(bearer(token));
  const previous = (await ctx.store.get('default/system/users/alice'))?.value;
  await putUser(ctx, 'default', 'alice', { password: 'alice-pw-2', policies: [] }, previous);
  await eventually(
    async () =>
      await ctx.auth.authenticate(bearer(token)).then(
        () => false,
        () => true,
      ),
    'old token refused',
  );
  const again = await ctx.auth.login('alice', 'alice-pw-2', 'a');
  assert.ok((await ctx.store.commit([{ op: 'delete', key: 'default/system/users/alice' }])).ok);
  await eventually(
    async () =>
      await ctx.auth.authenticate(bearer(again.token)).then(
        () => false,
        () => true,
      ),
    'token of deleted user refused',
  );
  await rejects(() => ctx.auth.login('alice', 'alice-pw-2', 'a'), isCode('unauthorized'));
  await done(ctx);
});

test('policies: authorize throws 403 naming path and operation; a policy change applies to live tokens', async () => {
  const ctx = await fresh({ adminPassword: 'pw-admin-7' });
  await put(ctx, 'default/system/policies/webhooks-ro', {
    name: 'webhooks-ro',
    rules: [{ path: '/v1/config/volga/**', operations: ['read'], effect: 'allow' }],
  });
  await putUser(ctx, 'default', 'bob', { password: 'bob-pw-123', policies: ['webhooks-ro'] });
  const { token } = await ctx.auth.login('bob', 'bob-pw-123', 'a');
  const p = await ctx.auth.authenticate(bearer(token));
  ctx.auth.authorize(p, '/v1/config/volga/webhooks/h1', 'read');
  const err = (() => {
    try {
      ctx.auth.authorize(p, '/v1/config/volga/webhooks/h1', 'update');
      return undefined;
    } catch (e) {
      return e;
    }
  })();
  assert.ok(err instanceof ApiError && err.status === 403);
  assert.equal([err.info?.path, err.info?.operation], ['/v1/config/volga/webhooks/h1', 'update']);
  assert.not.ok(ctx.auth.allows(p, '/v1/config/sites', 'read'));
  await put(ctx, 'default/system/policies/webhooks-ro', {
    name: 'webhooks-ro',
    rules: [
      { path: '/v1/config/volga/**', operations: ['read', 'update'], effect: 'allow' },
      { path: '/v1/config/volga/webhooks/h2', operations: ['read'], effect: 'deny' },
    ],
  });
  const allowsUpdate = async () =>
    ctx.auth.allows(await ctx.auth.authenticate(bearer(token)), '/v1/config/volga/webhooks/h1', 'update');
  await eventually(allowsUpdate, 'the changed policy applies');
  const q = await ctx.auth.authenticate(bearer(token));
  assert.not.ok(ctx.auth.allows(q, '/v1/config/volga/webhooks/h2', 'read'));
  // The admin user's built-in policy allows everything in its tree.
  const admin = await ctx.auth.authenticate(bearer((await ctx.auth.login('admin', 'pw-admin-7', 'a')).token));
  assert.ok(ctx.auth.allows(admin, '/v1/config/system/users/bob', 'delete'));
  await done(ctx);
});

async function principal(ctx: Ctx, username: string, password: string): Promise<Principal> {
  return ctx.auth.authenticate(bearer((await ctx.auth.login(username, password, 'a')).token));
}

test('tenants: users log in as name@tenant; a token reaches its tenant and subtenants only', async () => {
  const ctx = await fresh({ adminPassword: 'pw-admin-8' });
  await put(ctx, 'default/system/tenants/acme', { name: 'acme', 'shared-vaults': ['shared'] });
  await put(ctx, 'acme/system/tenants/acme-lab', { name: 'acme-lab' });
  await put(ctx, 'default/system/tenants/other', { name: 'other' });
  await putUser(ctx, 'acme', 'bob', { password: 'bob-acme-pw', policies: ['admin'] });
  await putUser(ctx, 'other', 'bob', { password: 'bob-other-pw', policies: ['admin'] });
  await rejects(() => ctx.auth.login('bob', 'bob-acme-pw', 'a'), isCode('unauthorized'));
  await rejects(() => ctx.auth.login('bob@other', 'bob-acme-pw', 'a'), isCode('unauthorized'));
  await rejects(() => ctx.auth.login('bob@nowhere', 'bob-acme-pw', 'a'), isCode('unauthorized'));
  const acme = await principal(ctx, 'bob@acme', 'bob-acme-pw');
  assert.equal([acme.user, acme.tenant, [...acme.tenants].sort()], ['bob', 'acme', ['acme', 'acme-lab']]);
  const root = await principal(ctx, 'admin', 'pw-admin-8');
  assert.equal([...root.tenants].sort(), ['acme', 'acme-lab', 'default', 'other']);
  ctx.auth.authorize(acme, '/v1/config/sites/s1', 'read', 'acme-lab');
  for (const t of ['default', 'other']) {
    assert.throws(() => ctx.auth.authorize(acme, '/v1/config/sites/s1', 'read', t), isCode('not-found'));
  }
  // Process-wide resources (the seal) are for the root tenant only, even to a subtenant admin.
  for (const [path, op] of [['/v1/strongbox/unseal', 'execute']] as const) {
    assert.throws(() => ctx.auth.authorize(acme, path, op), isCode('forbidden', 'root-tenant-only'), path);
    ctx.auth.authorize(root, path, op);
  }
  // Bus topics are each tenant's own (the topics API scopes them), so its policies decide.
  ctx.auth.authorize(acme, '/v1/state/volga/topics', 'read');
  ctx.auth.authorize(acme, '/v1/state/volga/topics/t/produce', 'execute');
  // Deleting the tenant ends its users' tokens.
  const token = (await ctx.auth.login('bob@other', 'bob-other-pw', 'a')).token;
  assert.ok((await ctx.store.commit([{ op: 'delete', key: 'default/system/tenants/other' }])).ok);
  await eventually(
    async () =>
      ctx.auth.authenticate(bearer(token)).then(
        () => false,
        () => true,
      ),
    'token of deleted tenant refused',
  );
  await done(ctx);
});

test('tenants: from-tenant reads only a vault the direct parent shares; names cannot be taken twice', async () => {
  const ctx = await fresh({ adminPassword: 'pw-admin-9' });
  await put(ctx, 'default/system/tenants/acme', { name: 'acme', 'shared-vaults': ['shared'] });
  await put(ctx, 'acme/system/tenants/lab', { name: 'lab', 'shared-vaults': ['lab-vault'] });
  const t = ctx.auth.tenants;
  assert.is(await t.vaultTenant('acme', undefined, 'own'), 'acme');
  assert.is(await t.vaultTenant('acme', 'acme', 'own'), 'acme');
  assert.is(await t.vaultTenant('acme', 'default', 'shared'), 'default');
  assert.is(await t.vaultTenant('lab', 'acme', 'lab-vault'), 'acme');
  const refused: Array<[string, string, string]> = [
    ['acme', 'default', 'other-vault'], // not shared
    ['lab', 'default', 'shared'], // grandparent: not the direct parent
    ['default', 'acme', 'shared'], // a parent cannot read a child's vault this way
    ['lab', 'acme', 'shared'], // shared with acme, not with lab
    ['acme', 'nowhere', 'shared'],
  ];
  for (const [tenant, from, vault] of refused) {
    await rejects(
      () => t.vaultTenant(tenant, from, vault, '/variables/0/value-from-vault-secret/from-tenant'),
      (e) =>
        isCode('forbidden', 'vault-not-shared')(e) &&
        e instanceof ApiError &&
        e.info?.path === '/variables/0/value-from-vault-secret/from-tenant',
      `${tenant} from ${from}/${vault}`,
    );
  }
  await t.checkNewTenant('default', 'fresh');
  await t.checkNewTenant('default', 'acme'); // replacing its own child is fine
  await rejects(() => t.checkNewTenant('acme', 'default'), isCode('exists', 'tenant-exists'));
  await rejects(() => t.checkNewTenant('default', 'lab'), isCode('exists', 'tenant-exists'));
  await put(ctx, 'ghost/volga/webhooks/h', { name: 'h' });
  await rejects(() => t.checkNewTenant('default', 'ghost'), isCode('exists'));
  await done(ctx);
});

test('prepareUserForStore: password hashed, hash kept on replace, foreign hashes refused; redactUser', async () => {
  const ctx = await fresh({ adminPassword: 'pw-admin-10' });
  const hashed = await ctx.auth.prepareUserForStore({ name: 'u', password: 'user-pw-1', policies: ['x'] });
  assert.not.ok('password' in hashed);
  assert.match(String(hashed['password-hash']), /^scrypt\$/);
  const replaced = await ctx.auth.prepareUserForStore({ name: 'u', policies: [] }, hashed);
  assert.is(replaced['password-hash'], hashed['password-hash']);
  const merged = await ctx.auth.prepareUserForStore({ ...hashed, policies: ['y'] });
  assert.is(merged['password-hash'], hashed['password-hash']);
  const bad: Array<[JsonObject, string]> = [
    [{ name: 'u', 'password-hash': 'plain' }, '/password-hash'],
    [{ name: 'u', password: '' }, '/password'],
    [{ name: 'u', password: 42 }, '/password'],
    [{ name: 'u', password: 'x'.repeat(1025) }, '/password'],
  ];
  for (const [obj, path] of bad) {
    await rejects(
      () => ctx.auth.prepareUserForStore(obj),
      (e) => e instanceof ApiError && e.status === 400 && e.info?.path === path,
      path,
    );
  }
  const { redactUser } = await import('../../src/auth/index.js');
  assert.equal(redactUser(hashed), { name: 'u', policies: ['x'] });
  await done(ctx);
});

test.run();
