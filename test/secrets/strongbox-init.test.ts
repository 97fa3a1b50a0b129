/**
 * Secret store init, both stores: with STRONGBOX_AUTO_UNSEAL=false and no key, the store is
 * uninitialised; unseal refuses every key (an unseal never chooses the key); init creates
 * the key and answers it once (409 afterwards); the check value stored is not the key; after
 * a restart only that key unseals (400 to any other). On Redis, a second process without the key
 * (its own DATA_DIR) stays sealed and writes no key of its own; the first key unseals it.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createClient } from 'redis';
import { createInstance } from '../../src/main/server.js';
import { startApi } from '../helpers/api.js';
import { loadSettings } from '../../src/lib/settings.js';
import { tempDir } from '../helpers/backends.js';
import { forEachBackend, type Backend } from '../helpers/backends.js';
import { wireErrors } from '../helpers/assert.js';

function codeOf(body: unknown): string | undefined {
  return wireErrors(body)[0]?.['error-info'];
}

function initSuite(backend: Backend, db: number): void {
  const t = suite(`strongbox-init (${backend})`);

  t('uninitialised → unseal refused → init answers the key once → 409 → restart: only that key unseals', async () => {
    const api = await startApi(backend, { db, env: { STRONGBOX_AUTO_UNSEAL: 'false' } });
    try {
      assert.ok(api.instance.deps.strongbox.sealed);
      const any = randomBytes(32).toString('base64');
      const early = await api.json('POST', '/v1/strongbox/unseal', { body: { key: any } });
      assert.is(early.status, 400);
      assert.is(codeOf(early.body), 'not-initialised');
      assert.ok(api.instance.deps.strongbox.sealed, 'an unseal never chooses the key');

      const first = await api.json('POST', '/v1/strongbox/init');
      assert.is(first.status, 200);
      assert.is(first.headers.get('cache-control'), 'no-store');
      const key = (first.body as { key: string }).key;
      assert.is(Buffer.from(key, 'base64').length, 32);
      assert.not.ok(api.instance.deps.strongbox.sealed, 'init unseals');
      const again = await api.json('POST', '/v1/strongbox/init');
      assert.is(again.status, 409);
      assert.is(codeOf(again.body), 'initialised');
      assert.is((await api.json('POST', '/v1/config/strongbox/vaults', { body: { name: 'v' } })).status, 201);

      // The key itself is nowhere in the store.
      const raw =
        backend === 'redis'
          ? JSON.stringify(await dumpRedis(api.settings.redisUrl as string))
          : readFileSync(join(api.settings.dataDir, 'store.aof'), 'utf8');
      assert.not.ok(raw.includes(key), 'the master key is not stored');
      assert.not.ok(raw.includes(Buffer.from(key, 'base64').toString('hex')), 'not in hex either');

      // A restart without the key: sealed, initialised; a wrong key 400, the key 204.
      const settings = api.settings;
      await api.instance.close(1000);
      const again2 = await createInstance(settings, { runtime: false, announce: () => {} });
      assert.ok(again2.deps.strongbox.sealed);
      // Embedded: tokens live in memory only, so log in again.
      const token = await adminToken(again2);
      const wrong = await call(again2, token, '/v1/strongbox/unseal', { key: any });
      assert.is(wrong.status, 400);
      assert.is(codeOf(wrong.body), 'wrong-key');
      assert.is((await call(again2, token, '/v1/strongbox/init', undefined)).status, 409);
      assert.is((await call(again2, token, '/v1/strongbox/unseal', { key })).status, 204);
      assert.not.ok(again2.deps.strongbox.sealed);
      await again2.close(1000);
    } finally {
      await api.instance.close(1000).catch(() => undefined);
    }
  });

  t('init on a store that has a key (auto-unseal, the default) → 409', async () => {
    const api = await startApi(backend, { db: db + 1 });
    try {
      const res = await api.json('POST', '/v1/strongbox/init');
      assert.is(res.status, 409);
      assert.is(codeOf(res.body), 'initialised');
      assert.is((await api.json('PUT', '/v1/strongbox/init')).status, 405);
    } finally {
      await api.close();
    }
  });

  if (backend === 'redis')
    t(
      'a second process on the same Redis without the key: sealed, no key file of its own; the first key unseals it',
      async () => {
        const first = await startApi(backend, { db: db + 1 });
        const keyFile = join(first.settings.dataDir, 'strongbox.key');
        const key = readFileSync(keyFile, 'utf8').trim();
        // Its own DATA_DIR, the same Redis (the store sealed with the first process's key).
        const second = await createInstance(
          loadSettings({
            REDIS_URL: first.settings.redisUrl as string,
            DATA_DIR: tempDir('edgeplane-second-'),
            ADMIN_PASSWORD: 'admin-password-1',
            LOG_LEVEL: 'error',
            SITE: 'local',
          }),
          { runtime: false, announce: () => {} },
        );
        try {
          assert.ok(second.deps.strongbox.sealed);
          assert.not.ok(existsSync(join(second.deps.settings.dataDir, 'strongbox.key')), 'no key of its own');
          const token = await adminToken(second);
          assert.is((await call(second, token, '/v1/strongbox/unseal', { key })).status, 204);
          assert.not.ok(second.deps.strongbox.sealed);
        } finally {
          await second.close(1000);
          await first.close();
        }
      },
    );

  t.run();
}

/** A token of admin on an instance made here (its own login: tokens of the embedded store live in memory). */
async function adminToken(inst: { app: { fetch(r: Request): Response | Promise<Response> } }): Promise<string> {
  const login = await inst.app.fetch(
    new Request('http://edgeplane.test/v1/login', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'admin', password: 'admin-password-1' }),
    }),
  );
  return ((await login.json()) as { token: string }).token;
}

async function call(
  inst: { app: { fetch(r: Request): Response | Promise<Response> } },
  token: string,
  path: string,
  body: unknown,
): Promise<{ status: number; body: unknown }> {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await inst.app.fetch(
    new Request(`http://edgeplane.test${path}`, {
      method: 'POST',
      headers,
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    }),
  );
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as unknown) : undefined };
}

async function dumpRedis(url: string): Promise<Record<string, string>> {
  const c = createClient({ url });
  await c.connect();
  const out: Record<string, string> = {};
  for (const k of await c.keys('*')) {
    const type = await c.type(k);
    out[k] = type === 'string' ? String(await c.get(k)) : type === 'hash' ? JSON.stringify(await c.hGetAll(k)) : type;
  }
  await c.quit();
  return out;
}

forEachBackend((backend) => initSuite(backend, 8));
