/**
 * Offline autonomy and exact catch-up, in processes on loopback: a control plane on the test
 * Redis, an edge site on a Redis server of its own that reaches the control plane through a
 * TCP proxy. The proxy is cut while 100 changes are made; the site keeps delivering, is killed
 * (-9) and restarted while cut and still serves its last configuration; once the proxy is back
 * its synced configuration equals, key for key, what the control plane holds for it. Then the
 * control plane is killed (-9) and restarted, and the site is killed in the middle of a burst
 * of changes: it reconnects and catches up again.
 */

import { createClient } from 'redis';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnApiProc, type ApiProc } from '../helpers/api-proc.js';
import { client, startTcpProxy, type Client, type TcpProxy, SITE_WAIT } from '../helpers/fleet.js';
import { freePort, startRedis, type RedisServer, freshRedisDb } from '../helpers/redis.js';
import { startWebhookServer, type WebhookServer } from '../helpers/webhook-server.js';
import { eventually } from '../helpers/wait.js';
import { tempDir } from '../helpers/backends.js';

const password = 'fleet-catchup-password';
const procs = new Set<ApiProc>();
const tmp = () => tempDir('edgeplane-fleet-catchup-');

let cpRedisUrl = '';
let cpPort = 0;
let cpDir = '';
let cp: ApiProc;
let admin: Client;
let proxy: TcpProxy;
let siteRedis: RedisServer;
let siteDir = '';
let siteToken = '';
let site: ApiProc;
let siteAdmin: Client;
let sink: WebhookServer;

async function startCp(): Promise<void> {
  cp = await spawnApiProc({
    REDIS_URL: cpRedisUrl,
    PORT: String(cpPort),
    SITE: 'hq',
    ADMIN_PASSWORD: password,
    DATA_DIR: cpDir,
  });
  procs.add(cp);
}

async function startSite(): Promise<void> {
  site = await spawnApiProc({
    CONTROL_PLANE_URL: `http://127.0.0.1:${proxy.port}`,
    SITE: 'edge-r',
    SITE_TOKEN: siteToken,
    REDIS_URL: siteRedis.url,
    DATA_DIR: siteDir,
    ADMIN_PASSWORD: 'site-local-password',
    API_PROC_RUNTIME: '1',
  });
  procs.add(site);
  siteAdmin = client(site.url, password);
}

function kill9(p: ApiProc): Promise<void> {
  procs.delete(p);
  return new Promise((resolve) => {
    if (p.child.exitCode !== null) return resolve();
    p.child.once('exit', () => resolve());
    p.child.kill('SIGKILL');
  });
}

async function hgetAll(url: string, key: string): Promise<Record<string, string>> {
  const c = createClient({ url });
  await c.connect();
  try {
    return await c.hGetAll(key);
  } finally {
    await c.quit();
  }
}

/** What the control plane holds for edge-r, and what edge-r's store holds as synced. */
async function views(): Promise<{
  cpHead: string;
  cpSet: Record<string, unknown>;
  siteVersion: string;
  siteSet: Record<string, unknown>;
}> {
  const meta = await hgetAll(cpRedisUrl, 'ep:fleet:edge-r:meta');
  const set = await hgetAll(cpRedisUrl, 'ep:fleet:edge-r:set');
  const cpSet = Object.fromEntries(Object.entries(set).map(([k, v]) => [k, JSON.parse(v) as unknown]));
  const rec = await hgetAll(siteRedis.url, 'ep:cfg:~fleet/sync');
  const record = rec.v ? (JSON.parse(rec.v) as { version: string; keys: string[] }) : { version: '', keys: [] };
  const siteSet: Record<string, unknown> = {};
  for (const key of record.keys) {
    const obj = await hgetAll(siteRedis.url, `ep:cfg:${key}`);
    siteSet[key] = obj.v ? (JSON.parse(obj.v) as unknown) : undefined;
  }
  return { cpHead: meta.head ?? '', cpSet, siteVersion: record.version, siteSet };
}

async function waitInSync(what: string): Promise<void> {
  await eventually(
    async () => {
      const v = await views();
      return v.cpHead !== '' && v.siteVersion === v.cpHead;
    },
    what,
    { ...SITE_WAIT, timeoutMs: 60_000 },
  );
  const v = await views();
  assert.equal(v.siteSet, v.cpSet, `${what}: the site's synced configuration equals the control plane's view of it`);
}

const hook = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  url: `${sink.url}/${name}`,
  topics: ['readings'],
  'site-placement': { sites: ['edge-r'] },
  data: '${MSG_PAYLOAD}',
  ...extra,
});

test.before(async () => {
  cpRedisUrl = await freshRedisDb(7);
  cpPort = await freePort();
  cpDir = tmp();
  siteDir = tmp();
  await startCp();
  admin = client(cp.url, password);
  proxy = await startTcpProxy(cpPort);
  siteRedis = await startRedis({ persist: true });
  sink = await startWebhookServer();
  assert.is(
    (await admin.call('PUT', '/v1/config/sites/edge-r', { name: 'edge-r', labels: { zone: 'a' } })).status,
    201,
  );
  siteToken = ((await admin.call('POST', '/v1/state/sites/edge-r/issue-token')).body as { token: string }).token;
  assert.is((await admin.call('PUT', '/v1/config/volga/webhooks/main', hook('main'))).status, 201);
  await startSite();
});

test.after(async () => {
  for (const p of [...procs]) await kill9(p);
  await proxy.close();
  await sink.close();
  await siteRedis.dispose();
});

/** GET /readyz (no token) of a process. */
async function readyz(
  p: ApiProc,
): Promise<{ status: number; body: { checks?: Array<{ name: string; ok: boolean }> } }> {
  const r = await fetch(`${p.url}/readyz`);
  return { status: r.status, body: (await r.json()) as { checks?: Array<{ name: string; ok: boolean }> } };
}

test('an edge site that never synced is not ready, and /readyz says why', async () => {
  const never = await spawnApiProc({
    PORT: '0',
    SITE: 'never',
    CONTROL_PLANE_URL: `http://127.0.0.1:${await freePort()}`,
    SITE_TOKEN: 'not-a-real-token',
    DATA_DIR: tmp(),
  });
  procs.add(never);
  try {
    const r = await readyz(never);
    assert.is(r.status, 503);
    const check = r.body.checks?.find((c) => c.name === 'fleet-sync') as { ok: boolean; reason?: string } | undefined;
    assert.is(check?.ok, false);
    assert.match(check?.reason ?? '', /never synced/);
  } finally {
    await never.stop();
    procs.delete(never);
  }
});

test('the site syncs and delivers', async () => {
  await waitInSync('first sync');
  await eventually(
    async () => {
      const r = await siteAdmin.call('GET', '/v1/state/volga/webhooks/main');
      return (r.body as { status?: string }).status === 'ready';
    },
    'exporter ready at the site',
    SITE_WAIT,
  );
  assert.is((await siteAdmin.call('POST', '/v1/state/volga/topics/readings/produce', { payload: 'm-0' })).status, 201);
  await sink.waitFor((reqs) => reqs.some((r) => r.body === 'm-0'), 'first delivery');
  assert.is((await readyz(site)).status, 200, 'ready once synced');
});

test('cut off: 100 changes at the control plane, the site keeps delivering, restarts, then catches up exactly', async () => {
  await proxy.cut();
  for (let i = 0; i < 100; i++) {
    const name = `w-${i % 20}`;
    let r;
    if (i % 5 === 4) r = await admin.call('DELETE', `/v1/config/volga/webhooks/w-${(i + 7) % 20}`);
    else if (i % 7 === 0) r = await admin.call('PATCH', '/v1/config/sites/edge-r', { labels: { step: String(i) } });
    else r = await admin.call('PUT', `/v1/config/volga/webhooks/${name}`, hook(name, { tries: i }));
    assert.ok(r.status < 300 || r.status === 404, `change ${i}: ${r.status} ${r.text}`);
  }
  const cut = await views();
  assert.is.not(cut.siteVersion, cut.cpHead, 'the site is behind while cut off');
  // Still delivering on its last configuration.
  assert.is(
    (await siteAdmin.call('POST', '/v1/state/volga/topics/readings/produce', { payload: 'm-cut' })).status,
    201,
  );
  await sink.waitFor((reqs) => reqs.some((r) => r.body === 'm-cut' && r.path === '/main'), 'delivery while cut off');
  // A restart while cut off: it serves its last configuration (and the control plane's users).
  await kill9(site);
  await startSite();
  const kept = await siteAdmin.call('GET', '/v1/config/volga/webhooks/main');
  assert.is(kept.status, 200, 'last applied configuration kept across a restart while cut off');
  await eventually(
    async () => {
      const r = await siteAdmin.call('GET', '/v1/state/volga/webhooks/main');
      return (r.body as { status?: string }).status === 'ready';
    },
    'exporter running again while cut off',
    SITE_WAIT,
  );
  assert.is(
    (await siteAdmin.call('POST', '/v1/state/volga/topics/readings/produce', { payload: 'm-restarted' })).status,
    201,
  );
  await sink.waitFor((reqs) => reqs.some((r) => r.body === 'm-restarted'), 'delivery after a restart while cut off');
  // Cut off, it serves its last configuration: ready.
  const ready = await readyz(site);
  assert.is(ready.status, 200, JSON.stringify(ready.body));
  await proxy.restore();
  await waitInSync('catch-up after the cut');
});

test('a control-plane kill -9 and restart: the site reconnects and catches up', async () => {
  await kill9(cp);
  await startCp();
  assert.is((await admin.call('PATCH', '/v1/config/volga/webhooks/main', { tries: 42 })).status, 204);
  await waitInSync('catch-up after the control plane restarted');
  const r = await siteAdmin.call('GET', '/v1/config/volga/webhooks/main');
  assert.is((r.body as { tries?: number }).tries, 42);
});

test('a site kill -9 in the middle of a burst of changes: restarted, it catches up exactly', async () => {
  const burst = (async () => {
    for (let i = 0; i < 40; i++)
      await admin.call('PUT', `/v1/config/volga/webhooks/b-${i % 10}`, hook(`b-${i % 10}`, { tries: i }));
  })();
  await eventually(
    async () => (await views()).siteSet['default/volga/webhooks/b-0'] !== undefined,
    'the burst reaches the site',
    SITE_WAIT,
  );
  await kill9(site);
  await burst;
  await startSite();
  await waitInSync('catch-up after a kill -9 mid-burst');
});

test.run();
