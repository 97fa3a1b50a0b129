/**
 * The secret store: values encrypted at rest (checked in the raw Redis hash
 * and in the embedded store's append-only file), never returned in clear by config reads,
 * readable in clear only as state; sealed store → 503 on strongbox and exporter endpoints,
 * unseal with the right key (204) or a wrong one (400). Both stores (Redis DB 3).
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createClient } from 'redis';
import { loadSettings, type Settings } from '../../src/lib/settings.js';
import { createInstance, type Instance } from '../../src/main/server.js';
import { startApi, type TestApi } from '../helpers/api.js';
import { forEachBackend, type Backend } from '../helpers/backends.js';
import { firstProblem, wireErrors } from '../helpers/assert.js';

const PLAIN = 'very-secret-plaintext-4711';
const VAULT = '/v1/config/strongbox/vaults/v';
const SECRET = `${VAULT}/secrets/s`;
const KEY = randomBytes(32).toString('base64');

function codeOf(body: unknown): string | undefined {
  return wireErrors(body)[0]?.['error-info'];
}

/** A second process on the same data (same DATA_DIR / Redis DB), without flushing it, logged in as admin. */
async function reopen(
  settings: Settings,
  env: Record<string, string>,
): Promise<{
  instance: Instance;
  call(method: string, path: string, body?: unknown): Promise<{ status: number; body: unknown }>;
}> {
  const raw: Record<string, string> = {
    DATA_DIR: settings.dataDir,
    ADMIN_PASSWORD: 'admin-password-1',
    LOG_LEVEL: 'error',
    ...env,
  };
  if (settings.redisUrl) raw.REDIS_URL = settings.redisUrl;
  const instance = await createInstance(loadSettings(raw), { runtime: false, announce: () => {} });
  let token = '';
  const call = async (method: string, path: string, body?: unknown) => {
    const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await instance.app.fetch(
      new Request(`http://edgeplane.test${path}`, {
        method,
        headers,
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      }),
    );
    const text = await res.text();
    return { status: res.status, body: text ? (JSON.parse(text) as unknown) : undefined };
  };
  const login = await call('POST', '/v1/login', { username: 'admin', password: 'admin-password-1' });
  assert.is(login.status, 200);
  token = (login.body as { token: string }).token;
  return { instance, call };
}

function secretSuite(backend: Backend): void {
  const t = suite(`api-secrets (${backend})`);
  let api: TestApi;
  /** The restart test closes the first instance itself. */
  let open = false;
  t.before(async () => {
    api = await startApi(backend, { db: 3, env: { STRONGBOX_KEY: KEY } });
    open = true;
  });
  t.after(async () => {
    if (open) await api.close();
  });

  t('create a vault and a secret; config reads show keys only, never the value', async () => {
    assert.is((await api.json('POST', '/v1/config/strongbox/vaults', { body: { name: 'v' } })).status, 201);
    assert.is(
      (await api.json('POST', `${VAULT}/secrets`, { body: { name: 's', data: { password: PLAIN, user: 'bob' } } }))
        .status,
      201,
    );
    const one = await api.json('GET', SECRET);
    assert.is(one.status, 200);
    assert.equal(one.body, { name: 's', data: { password: '(secret)', user: '(secret)' } });
    for (const path of [
      `${VAULT}/secrets`,
      '/v1/config',
      '/v1/config?send-etag',
      '/v1/state',
      `/v1/state/strongbox/vaults/v/secrets`,
    ]) {
      const res = await api.req('GET', path);
      assert.is(res.status, 200, path);
      const text = await res.text();
      assert.not.ok(text.includes(PLAIN), path);
      assert.not.ok(text.includes('bob'), path);
    }
    const yaml = await api.req('GET', SECRET, { headers: { accept: 'application/yaml' } });
    assert.not.ok((await yaml.text()).includes(PLAIN));
  });

  t('a user who may update a secret but not read it cannot test a guess: every write of it is a change', async () => {
    const rules = [{ path: '/v1/config/strongbox/vaults/v/secrets/*', operations: ['update'], effect: 'allow' }];
    assert.is((await api.json('PUT', '/v1/config/system/policies/wo', { body: { rules } })).status, 201);
    const user = { password: 'write-only-password-1', policies: ['wo'] };
    assert.is((await api.json('PUT', '/v1/config/system/users/wo', { body: user })).status, 201);
    const login = await api.json('POST', '/v1/login', {
      body: { username: 'wo', password: 'write-only-password-1' },
    });
    const wo = { authorization: `Bearer ${(login.body as { token: string }).token}` };
    const impacted = async (password: string, headers?: Record<string, string>) => {
      const res = await api.json('PATCH', `${SECRET}?dry-run`, {
        body: { data: { password } },
        ...(headers ? { headers } : {}),
      });
      assert.is(res.status, 200, JSON.stringify(res.body));
      return (res.body as { 'impacted-resources': unknown[] })['impacted-resources'].length;
    };
    // The right value and a wrong one answer alike for the writer who cannot read it.
    assert.is(await impacted(PLAIN, wo), 1);
    assert.is(await impacted('a-wrong-guess', wo), 1);
    // The admin, who may read it, is told its write changes nothing.
    assert.is(await impacted(PLAIN), 0);
  });

  t('the state of one secret is never cached on the way: Cache-Control no-store', async () => {
    const res = await api.json('GET', '/v1/state/strongbox/vaults/v/secrets/s');
    assert.is(res.status, 200);
    assert.is(res.headers.get('cache-control'), 'no-store');
  });

  t('the state of one secret returns it in clear as {name, dict}', async () => {
    const res = await api.json('GET', '/v1/state/strongbox/vaults/v/secrets/s');
    assert.is(res.status, 200);
    assert.equal(res.body, { name: 's', dict: { password: PLAIN, user: 'bob' } });
  });

  t('a secret without a vault → 404 missing-parent, the only error; nothing stored', async () => {
    const res = await api.json('PUT', '/v1/config/strongbox/vaults/none/secrets/x', {
      body: { name: 'x', data: { a: 'b' } },
    });
    assert.is(res.status, 404);
    assert.is(codeOf(res.body), 'missing-parent');
    // Not also 'Cannot delete /v1/config/strongbox/vaults/none: secret x still uses it' (nothing asked for a delete).
    assert.is(wireErrors(res.body).length, 1, JSON.stringify(res.body));
    assert.is((await api.json('GET', '/v1/config/strongbox/vaults/none/secrets/x')).status, 404);
  });

  t('GET → PUT back of the redacted form keeps the values; a changed value is re-encrypted', async () => {
    const got = await api.json('GET', SECRET);
    const body = got.body as { name: string; data: Record<string, string> };
    assert.is(
      (await api.json('PUT', SECRET, { body: { ...body, data: { ...body.data, user: 'alice' } } })).status,
      204,
    );
    const state = await api.json('GET', '/v1/state/strongbox/vaults/v/secrets/s');
    assert.equal(state.body, { name: 's', dict: { password: PLAIN, user: 'alice' } });
  });

  t('JSON Patch sees the redacted form: a test op cannot probe a value; untouched values are kept', async () => {
    const etag = (await api.json('GET', SECRET)).headers.get('etag');
    const probe = await api.json('PATCH', SECRET, {
      body: [{ op: 'test', path: '/data/password', value: PLAIN }],
      type: 'application/json-patch+json',
    });
    assert.is(probe.status, 400);
    assert.is(codeOf(probe.body), 'test-failed');
    assert.is((await api.json('GET', SECRET)).headers.get('etag'), etag);
    const ops = [
      { op: 'test', path: '/data/password', value: '(secret)' },
      { op: 'replace', path: '/data/user', value: 'alice' },
      { op: 'add', path: '/data/token', value: 't0k3n' },
    ];
    assert.is((await api.json('PATCH', SECRET, { body: ops, type: 'application/json-patch+json' })).status, 204);
    const state = await api.json('GET', '/v1/state/strongbox/vaults/v/secrets/s');
    assert.equal(state.body, { name: 's', dict: { password: PLAIN, user: 'alice', token: 't0k3n' } });
    assert.is(
      (
        await api.json('PATCH', SECRET, {
          body: [{ op: 'remove', path: '/data/token' }],
          type: 'application/json-patch+json',
        })
      ).status,
      204,
    );
    assert.equal((await api.json('GET', '/v1/state/strongbox/vaults/v/secrets/s')).body, {
      name: 's',
      dict: { password: PLAIN, user: 'alice' },
    });
  });

  t('create then update of one secret in one transaction: a redacted value keeps the value just created', async () => {
    const x = `${VAULT}/secrets/s2`;
    const res = await api.json('PATCH', '/v1/config', {
      body: [
        { 'x-path': x, 'x-operation': 'create', name: 's2', data: { a: 'A-value', b: 'B-value' } },
        { 'x-path': x, 'x-operation': 'update', data: { a: '(secret)', c: 'C-value' } },
      ],
    });
    assert.is(res.status, 204, JSON.stringify(res.body));
    const state = await api.json('GET', '/v1/state/strongbox/vaults/v/secrets/s2');
    assert.equal(state.body, { name: 's2', dict: { a: 'A-value', b: 'B-value', c: 'C-value' } });
    assert.is((await api.json('DELETE', x)).status, 204);
  });

  t('(secret) where no value is stored is a 400 no-stored-value naming the member; nothing stored', async () => {
    const created = await api.json('PUT', `${VAULT}/secrets/fresh`, { body: { data: { k: '(secret)' } } });
    assert.is(created.status, 400, JSON.stringify(created.body));
    assert.is(firstProblem(created.body).code, 'no-stored-value');
    assert.is(firstProblem(created.body).path, 'data/k');
    assert.is((await api.json('GET', `${VAULT}/secrets/fresh`)).status, 404);
    assert.is((await api.json('PUT', `${VAULT}/secrets/fresh`, { body: { data: { k: 'v' } } })).status, 201);
    const added = await api.json('PATCH', `${VAULT}/secrets/fresh`, {
      body: { data: { k: '(secret)', k2: '(secret)' } },
    });
    assert.is(added.status, 400, JSON.stringify(added.body));
    assert.is(firstProblem(added.body).path, 'data/k2');
    const state = await api.json('GET', '/v1/state/strongbox/vaults/v/secrets/fresh');
    assert.equal(state.body, { name: 'fresh', dict: { k: 'v' } });
    assert.is((await api.json('DELETE', `${VAULT}/secrets/fresh`)).status, 204);
  });

  t('values are encrypted at rest (AES-256-GCM ciphertext, no plaintext in the stored form)', async () => {
    let raw: string;
    if (backend === 'redis') {
      const c = createClient({ url: api.settings.redisUrl ?? '' });
      await c.connect();
      raw = (await c.hGet('ep:cfg:default/strongbox/vaults/v/secrets/s', 'v')) ?? '';
      await c.quit();
      assert.ok(raw.length > 0, 'the secret hash exists');
    } else {
      raw = readFileSync(join(api.settings.dataDir, 'store.aof'), 'utf8');
      assert.ok(raw.includes('strongbox/vaults/v/secrets/s'), 'the secret is in the AOF');
    }
    assert.not.ok(raw.includes(PLAIN));
    assert.not.ok(raw.includes('alice'));
    assert.ok(raw.includes('enc:v1:'), 'values are stored as ciphertext');
  });

  t(
    'sealed after a restart without a key: 503 on strongbox and exporter endpoints; wrong key 400; right key 204',
    async () => {
      await api.json('PUT', '/v1/config/volga/webhooks/h', {
        body: {
          name: 'h',
          topics: ['t'],
          'site-placement': { 'all-sites': true },
          url: 'http://example.test/',
          data: 'x',
        },
      });
      await api.close();
      open = false;
      const sealed = await reopen(api.settings, { STRONGBOX_AUTO_UNSEAL: 'false' });
      try {
        const reads = [
          '/v1/config/strongbox/vaults',
          SECRET,
          '/v1/config/volga/webhooks',
          '/v1/config/volga/webhooks/h',
          '/v1/state/volga/webhooks',
          '/v1/state/strongbox/vaults/v/secrets/s',
        ];
        for (const path of reads) {
          const res = await sealed.call('GET', path);
          assert.is(res.status, 503, path);
          assert.is(codeOf(res.body), 'sealed', path);
        }
        const writes: Array<[string, string, unknown]> = [
          [
            'POST',
            '/v1/config/volga/webhooks',
            { name: 'h2', topics: ['t'], 'site-placement': { 'all-sites': true }, url: 'http://x.test/', data: 'x' },
          ],
          ['PUT', SECRET, { name: 's', data: { a: 'b' } }],
          ['DELETE', VAULT, undefined],
          ['POST', '/v1/state/volga/webhooks/h/restart', undefined],
          ['PATCH', '/v1/config', [{ 'x-path': '/v1/config/strongbox/vaults/v2', name: 'v2' }]],
        ];
        for (const [method, path, body] of writes) {
          const res = await sealed.call(method, path, body);
          assert.is(res.status, 503, `${method} ${path}`);
          assert.is(codeOf(res.body), 'sealed', `${method} ${path}`);
        }
        assert.is((await sealed.call('GET', '/v1/config/applications')).status, 200, 'other endpoints still work');
        const wrong = await sealed.call('POST', '/v1/strongbox/unseal', { key: randomBytes(32).toString('base64') });
        assert.is(wrong.status, 400);
        assert.is(codeOf(wrong.body), 'wrong-key');
        const short = await sealed.call('POST', '/v1/strongbox/unseal', { key: 'c2hvcnQ=' });
        assert.is(short.status, 400);
        assert.is(codeOf(short.body), 'bad-key');
        const missing = await sealed.call('POST', '/v1/strongbox/unseal', { nokey: 1 });
        assert.is(missing.status, 400);
        assert.is(codeOf(missing.body), 'schema-required');
        const number = await sealed.call('POST', '/v1/strongbox/unseal', { key: 12 });
        assert.is(codeOf(number.body), 'schema-type');
        // The right key beside an unknown member: refused, and the store stays sealed.
        const extra = await sealed.call('POST', '/v1/strongbox/unseal', { key: KEY, x: 1 });
        assert.is(extra.status, 400);
        assert.is(codeOf(extra.body), 'unknown-field');
        assert.is((await sealed.call('GET', SECRET)).status, 503, 'still sealed after refused keys');
        assert.is((await sealed.call('POST', '/v1/strongbox/unseal', { key: KEY })).status, 204);
        assert.is((await sealed.call('GET', '/v1/config/volga/webhooks/h')).status, 200);
        const state = await sealed.call('GET', '/v1/state/strongbox/vaults/v/secrets/s');
        assert.is(state.status, 200);
        assert.equal(state.body, { name: 's', dict: { password: PLAIN, user: 'alice' } });
      } finally {
        await sealed.instance.close(1000);
      }
    },
  );

  t.run();
}

forEachBackend(secretSuite);
