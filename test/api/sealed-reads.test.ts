/**
 * The sealed store (CONTRACT §6), what an audit found: an exporter's `attempts` and `rewind`
 * answer 503 like every webhook-exporter endpoint (they answered 404); a `match-path` read of
 * /v1/config that selects exporters answers 503 as their list does; `GET /v1/state` shows the
 * exporters, in status `error` when they need a secret (they were silently left out);
 * `/readyz` on an uninitialised store says to `init`, not to `unseal`.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { loadSettings, type Settings } from '../../src/lib/settings.js';
import { createInstance, type Instance } from '../../src/main/server.js';
import { startApi } from '../helpers/api.js';
import { forEachBackend, type Backend } from '../helpers/backends.js';
import { firstProblem } from '../helpers/assert.js';
import { eventually } from '../helpers/wait.js';

type Call = (method: string, path: string, body?: unknown) => Promise<{ status: number; body: unknown }>;

/** The same DATA_DIR / Redis database again, with `env` besides, the exporter runtime on; logged in. */
async function reopen(settings: Settings, env: Record<string, string>): Promise<{ instance: Instance; call: Call }> {
  const raw: Record<string, string> = {
    DATA_DIR: settings.dataDir,
    ADMIN_PASSWORD: 'admin-password-1',
    LOG_LEVEL: 'error',
    ...env,
  };
  if (settings.redisUrl) raw.REDIS_URL = settings.redisUrl;
  const instance = await createInstance(loadSettings(raw), { runtime: true, announce: () => {} });
  let token = '';
  const call: Call = async (method, path, body) => {
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
  assert.is(login.status, 200, JSON.stringify(login.body));
  token = (login.body as { token: string }).token;
  return { instance, call };
}

const hook = {
  name: 'h',
  topics: ['t'],
  'site-placement': { 'all-sites': true },
  url: 'http://127.0.0.1:9/',
  data: '${PW}',
  variables: [{ name: 'PW', 'value-from-vault-secret': { vault: 'v', secret: 's', key: 'password' } }],
};

function run(backend: Backend, db: number): void {
  const t = suite(`sealed store reads (${backend})`);

  t('sealed: attempts, rewind and match-path 503; GET /v1/state shows the exporter in error', async () => {
    const api = await startApi(backend, { db });
    for (const [method, path, body] of [
      ['POST', '/v1/config/strongbox/vaults', { name: 'v' }],
      ['POST', '/v1/config/strongbox/vaults/v/secrets', { name: 's', data: { password: 'pw-1' } }],
      ['POST', '/v1/config/volga/webhooks', hook],
    ] as const) {
      const r = await api.json(method, path, { body });
      assert.is(r.status, 201, `${path}: ${JSON.stringify(r.body)}`);
    }
    await api.close();
    const sealed = await reopen(api.settings, { STRONGBOX_AUTO_UNSEAL: 'false' });
    try {
      assert.ok(sealed.instance.deps.strongbox.sealed);
      for (const [method, path, body] of [
        ['GET', '/v1/state/volga/webhooks/h/attempts', undefined],
        ['POST', '/v1/state/volga/webhooks/h/rewind', { to: 'beginning' }],
        ['GET', `/v1/config?match-path=${encodeURIComponent('/v1/config/volga/webhooks/*')}`, undefined],
        ['GET', `/v1/config?match-path=${encodeURIComponent('/v1/config/strongbox/**')}`, undefined],
      ] as const) {
        const r = await sealed.call(method, path, body);
        assert.is(r.status, 503, `${method} ${path}: ${JSON.stringify(r.body)}`);
        assert.is(firstProblem(r.body).code, 'sealed', path);
      }
      // Other match-paths and the whole tree still answer (the exporter's configuration listed).
      const apps = await sealed.call('GET', `/v1/config?match-path=${encodeURIComponent('/v1/config/sites/*')}`);
      assert.is(apps.status, 200);
      const all = await sealed.call('GET', '/v1/config');
      assert.is(all.status, 200);
      assert.ok((all.body as Array<{ 'x-path': string }>).some((o) => o['x-path'] === '/v1/config/volga/webhooks/h'));
      // The exporter needs a secret: it cannot run, and GET /v1/state says so.
      let last: unknown;
      const h = await eventually(
        async () => {
          const state = await sealed.call('GET', '/v1/state');
          assert.is(state.status, 200);
          last = state.body;
          const found = (state.body as Array<Record<string, unknown>>).find(
            (o) => o['x-path'] === '/v1/state/volga/webhooks/h',
          );
          return found?.status === 'error' && found;
        },
        () => `the exporter in error in GET /v1/state: ${JSON.stringify(last).slice(0, 600)}`,
        { timeoutMs: 30_000 },
      );
      assert.match(String(h['last-error']), /sealed/);
      const secrets = (await sealed.call('GET', '/v1/state')).body as Array<Record<string, unknown>>;
      assert.not.ok(
        secrets.some((o) => String(o['x-path']).startsWith('/v1/state/strongbox/')),
        'secrets are not shown while sealed',
      );
      const ready = await sealed.call('GET', '/readyz');
      assert.is(ready.status, 503);
      assert.match(JSON.stringify(ready.body), /unseal/);
    } finally {
      await sealed.instance.close(1000);
    }
  });

  t('/readyz on an uninitialised store says init, not unseal', async () => {
    const api = await startApi(backend, { db, env: { STRONGBOX_AUTO_UNSEAL: 'false' } });
    try {
      const r = await api.json('GET', '/readyz');
      assert.is(r.status, 503);
      const check = (r.body as { checks: Array<{ name: string; reason?: string }> }).checks.find(
        (c) => c.name === 'secret-store',
      );
      assert.match(check?.reason ?? '', /not initialised: POST \/v1\/strongbox\/init/);
      assert.not.match(check?.reason ?? '', /unseal/);
    } finally {
      await api.close();
    }
  });

  t.run();
}

forEachBackend((backend) => run(backend, 9));
