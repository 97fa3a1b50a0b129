/**
 * GET /healthz and /readyz: no token needed; /readyz names each check, answers 503 with the
 * reason while Redis is unreachable (a redis-server of this file's own, stopped and started
 * again) or the secret store is sealed, and 200 again once both are back.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startApi } from '../helpers/api.js';
import { startRedis } from '../helpers/redis.js';
import { runChecks } from '../../src/ops/probes.js';
import { createInstance } from '../../src/main/server.js';
import { loadSettings } from '../../src/lib/settings.js';
import { eventually } from '../helpers/wait.js';

type Probe = {
  status: number;
  body: { status: string; checks: Array<{ name: string; ok: boolean; reason?: string }> };
};

async function probe(fetch: (r: Request) => Response | Promise<Response>, path: string): Promise<Probe> {
  const res = await fetch(new Request(`http://edgeplane.test${path}`));
  assert.is(res.headers.get('content-type'), 'application/json');
  return { status: res.status, body: (await res.json()) as Probe['body'] };
}

const names = (p: Probe) => p.body.checks.map((c) => c.name);

test('healthz and readyz answer without a token and name each check', async () => {
  const api = await startApi('embedded');
  try {
    const h = await probe(api.instance.app.fetch, '/healthz');
    assert.is(h.status, 200);
    assert.is(h.body.status, 'ok');
    assert.equal(names(h), ['process']);
    const r = await probe(api.instance.app.fetch, '/readyz');
    assert.is(r.status, 200);
    assert.is(r.body.status, 'ready');
    assert.equal(names(r), ['store', 'bus', 'secret-store']);
    assert.ok(r.body.checks.every((c) => c.ok && c.reason === undefined));
    // Other methods: 405 with Allow, not 401.
    const post = await api.instance.app.fetch(new Request('http://edgeplane.test/readyz', { method: 'POST' }));
    assert.is(post.status, 405);
    assert.is(post.headers.get('allow'), 'GET, OPTIONS');
  } finally {
    await api.close();
  }
});

test('readyz: 503 naming the store and the bus while Redis is unreachable, 200 once it is back', async () => {
  const redis = await startRedis();
  const dir = mkdtempSync(join(tmpdir(), 'edgeplane-probes-'));
  const settings = loadSettings({
    REDIS_URL: redis.url,
    DATA_DIR: dir,
    ADMIN_PASSWORD: 'admin-password-1',
    LOG_LEVEL: 'error',
  });
  const inst = await createInstance(settings, { runtime: false, announce: () => {} });
  try {
    assert.is((await probe(inst.app.fetch, '/readyz')).status, 200);
    await redis.stop();
    const down = await probe(inst.app.fetch, '/readyz');
    assert.is(down.status, 503);
    assert.is(down.body.status, 'not-ready');
    const store = down.body.checks.find((c) => c.name === 'store');
    assert.ok(store && !store.ok && typeof store.reason === 'string' && store.reason.length > 0, JSON.stringify(down));
    const bus = down.body.checks.find((c) => c.name === 'bus');
    assert.ok(bus && !bus.ok && bus.reason, JSON.stringify(down));
    assert.ok(down.body.checks.find((c) => c.name === 'secret-store')?.ok);
    // Liveness does not depend on Redis.
    assert.is((await probe(inst.app.fetch, '/healthz')).status, 200);
    await redis.restart();
    let up: Probe | undefined;
    await eventually(
      async () => (up = await probe(inst.app.fetch, '/readyz')).status === 200,
      () => `ready again after Redis is back: ${JSON.stringify(up)}`,
      { timeoutMs: 10_000, everyMs: 100 },
    );
  } finally {
    await inst.close(1000);
    await redis.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('readyz: 503 while the secret store is sealed, 200 after unseal', async () => {
  const key = randomBytes(32).toString('base64');
  const dir = mkdtempSync(join(tmpdir(), 'edgeplane-probes-'));
  const base = { DATA_DIR: dir, ADMIN_PASSWORD: 'admin-password-1', LOG_LEVEL: 'error' };
  // First start with a key (stores its check value), then again without one: sealed.
  const first = await createInstance(loadSettings({ ...base, STRONGBOX_KEY: key }), { runtime: false });
  await first.close(1000);
  const api = await startApi('embedded', { env: { ...base, STRONGBOX_AUTO_UNSEAL: 'false' } });
  try {
    const sealed = await probe(api.instance.app.fetch, '/readyz');
    assert.is(sealed.status, 503);
    const check = sealed.body.checks.find((c) => c.name === 'secret-store');
    assert.ok(check && !check.ok && /sealed/.test(check.reason ?? ''), JSON.stringify(sealed));
    assert.ok(sealed.body.checks.find((c) => c.name === 'store')?.ok);
    const res = await api.req('POST', '/v1/strongbox/unseal', { body: { key } });
    assert.is(res.status, 204, await res.text());
    assert.is((await probe(api.instance.app.fetch, '/readyz')).status, 200);
  } finally {
    await api.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a check list: a failing, a throwing and a hanging check are each named with their reason', async () => {
  const r = await runChecks(
    [
      { name: 'fine', run: () => undefined },
      { name: 'site-synced', run: () => 'this site has never synced its configuration' },
      {
        name: 'throws',
        run: () => {
          throw new Error('boom');
        },
      },
      { name: 'hangs', run: () => new Promise<undefined>(() => {}) },
    ],
    50,
  );
  assert.is(r.ready, false);
  assert.equal(r.checks, [
    { name: 'fine', ok: true },
    { name: 'site-synced', ok: false, reason: 'this site has never synced its configuration' },
    { name: 'throws', ok: false, reason: 'boom' },
    { name: 'hangs', ok: false, reason: 'no answer within 50 ms' },
  ]);
});

test.run();
