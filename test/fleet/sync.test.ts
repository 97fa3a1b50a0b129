/**
 * The fleet end to end, in processes on loopback: a control plane on the test Redis, an edge
 * site on the embedded store that syncs from it (exporter runtime on, a webhook sink of its
 * own). Site tokens (issue, revoke, what they can reach), readiness before and after the first
 * sync, placement by label reaching the site and moving away, read-only synced objects, local
 * operations at the site. (Cut-offs, catch-up and kills: e2e.test.ts.)
 */

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnApiProc, type ApiProc } from '../helpers/api-proc.js';
import { client, type Client, SITE_WAIT } from '../helpers/fleet.js';
import { startWebhookServer, type WebhookServer } from '../helpers/webhook-server.js';
import { freePort, freshRedisDb } from '../helpers/redis.js';
import { eventually } from '../helpers/wait.js';
import { generateSiteKey } from '../../src/secrets/sealed.js';
import { tempDir } from '../helpers/backends.js';

const password = 'fleet-admin-password';
/** A site presents its public key on every sync request (secrets are sealed for it). */
const keyHeader = { 'x-edgeplane-site-key': generateSiteKey().publicKey };
const tmp = () => tempDir('edgeplane-fleet-');

let cp: ApiProc;
let admin: Client;
let sink: WebhookServer;
let site: ApiProc | undefined;
let siteAdmin: Client;
let token1 = '';

test.before(async () => {
  cp = await spawnApiProc({ REDIS_URL: await freshRedisDb(3), SITE: 'hq', ADMIN_PASSWORD: password, DATA_DIR: tmp() });
  admin = client(cp.url, password);
  sink = await startWebhookServer();
  for (const [name, labels] of [
    ['edge-1', { region: 'eu' }],
    ['edge-2', { region: 'us' }],
  ] as const) {
    const r = await admin.call('PUT', `/v1/config/sites/${name}`, { name, type: 'edge', labels });
    assert.ok(r.status === 201 || r.status === 204, `site ${name}: ${r.status} ${r.text}`);
  }
});

test.after(async () => {
  await site?.stop();
  await cp.stop();
  await sink.close();
});

test('issue-token: 201 {token} once per call; unknown site 404; a new token revokes the previous one', async () => {
  const first = await admin.call('POST', '/v1/state/sites/edge-1/issue-token');
  assert.is(first.status, 201, first.text);
  const t1 = (first.body as { token: string }).token;
  assert.match(t1, /^[A-Za-z0-9_-]{43}$/);
  assert.is((await admin.call('POST', '/v1/state/sites/nowhere/issue-token')).status, 404);
  assert.is((await admin.call('GET', '/v1/state/sites/edge-1/issue-token')).status, 405);
  const sync = (tok: string, name = 'edge-1') =>
    fetch(`${cp.url}/v1/fleet/sites/${name}/sync`, { headers: { authorization: `Bearer ${tok}`, ...keyHeader } });
  const before = await sync(t1);
  assert.is(before.status, 200);
  assert.match(before.headers.get('content-type') ?? '', /text\/event-stream/);
  await before.body?.cancel();
  const second = await admin.call('POST', '/v1/state/sites/edge-1/issue-token');
  token1 = (second.body as { token: string }).token;
  assert.is.not(token1, t1);
  assert.is((await sync(t1)).status, 401, 'the previous token is revoked');
});

test('a site token reaches its own sync route and nothing else', async () => {
  const other = (await admin.call('POST', '/v1/state/sites/edge-2/issue-token')).body as { token: string };
  const asSite = { authorization: `Bearer ${token1}`, ...keyHeader };
  const routes: Array<[string, string, unknown?]> = [
    ['GET', '/v1/config'],
    ['GET', '/v1/config/sites/edge-1'],
    ['PUT', '/v1/config/sites/edge-1', { name: 'edge-1' }],
    ['DELETE', '/v1/config/sites/edge-1'],
    ['GET', '/v1/state'],
    ['GET', '/v1/state/sites/edge-1'],
    ['GET', '/v1/state/volga/topics'],
    ['POST', '/v1/state/volga/topics/t/produce', { payload: 'x' }],
    ['POST', '/v1/state/volga/webhooks/w/restart'],
    ['POST', '/v1/state/sites/edge-1/issue-token'],
    ['POST', '/v1/state/strongbox/token/refresh'],
    ['POST', '/v1/strongbox/unseal', { key: 'x' }],
    ['GET', '/v1/no/such/path'],
  ];
  for (const [method, path, body] of routes) {
    const r = await admin.call(method, path, body, asSite);
    assert.ok(r.status === 401 || r.status === 403, `${method} ${path} with a site token: ${r.status}`);
  }
  const res = await fetch(`${cp.url}/v1/fleet/sites/edge-2/sync`, { headers: asSite });
  assert.is(res.status, 403, "another site's stream");
  const mine = await fetch(`${cp.url}/v1/fleet/sites/edge-2/sync`, {
    headers: { authorization: `Bearer ${other.token}`, ...keyHeader },
  });
  assert.is(mine.status, 200);
  await mine.body?.cancel();
  const keyless = await fetch(`${cp.url}/v1/fleet/sites/edge-2/sync`, {
    headers: { authorization: `Bearer ${other.token}` },
  });
  assert.is(keyless.status, 400, 'a sync request without the site key');
  assert.match(await keyless.text(), /x-edgeplane-site-key/);
  const badKey = await fetch(`${cp.url}/v1/fleet/sites/edge-2/sync`, {
    headers: { authorization: `Bearer ${other.token}`, 'x-edgeplane-site-key': 'not-a-key' },
  });
  assert.is(badKey.status, 400, 'a malformed site key');
  assert.match(await badKey.text(), /bad-key/);
  const user = await fetch(`${cp.url}/v1/fleet/sites/edge-1/sync`, {
    headers: { authorization: `Bearer ${await admin.token()}` },
  });
  assert.is(user.status, 401, 'a user token is not a site token');
  assert.is((await fetch(`${cp.url}/v1/fleet/sites/edge-1/sync`)).status, 401);
});

async function siteHas(path: string): Promise<boolean> {
  return (await siteAdmin.call('GET', `/v1/config/${path}`)).status === 200;
}

/** GET /readyz (no token): its status and the fleet-sync check. */
async function fleetReadiness(p: ApiProc): Promise<{ status: number; check?: { ok: boolean; reason?: string } }> {
  const r = await fetch(`${p.url}/readyz`);
  const body = (await r.json()) as { checks?: Array<{ name: string; ok: boolean; reason?: string }> };
  return { status: r.status, check: body.checks?.find((c) => c.name === 'fleet-sync') };
}

test('an edge site that never synced is not ready, and /readyz says why', async () => {
  const never = await spawnApiProc({
    PORT: '0',
    SITE: 'never',
    CONTROL_PLANE_URL: `http://127.0.0.1:${await freePort()}`,
    SITE_TOKEN: 'not-a-real-token',
    DATA_DIR: tmp(),
  });
  try {
    const r = await fleetReadiness(never);
    assert.is(r.status, 503);
    assert.is(r.check?.ok, false);
    assert.match(r.check?.reason ?? '', /never synced/);
  } finally {
    await never.stop();
  }
});

test('a CONTROL_PLANE_URL with a path: the failure says to name the base URL (not only the 401 of a user route)', async () => {
  assert.is((await admin.call('PUT', '/v1/config/sites/pathy', { name: 'pathy', type: 'edge' })).status, 201);
  const token = ((await admin.call('POST', '/v1/state/sites/pathy/issue-token')).body as { token: string }).token;
  const pathy = await spawnApiProc({
    SITE: 'pathy',
    CONTROL_PLANE_URL: `${cp.url}/v1`,
    SITE_TOKEN: token,
    DATA_DIR: tmp(),
    LOG_LEVEL: 'warn',
  });
  try {
    await eventually(
      () => /CONTROL_PLANE_URL has the path \/v1: name the control plane's base URL/.test(pathy.output()),
      () => `the hint in the site's log: ${pathy.output().slice(-1500)}`,
      SITE_WAIT,
    );
  } finally {
    await pathy.stop();
  }
});

test('an exporter placed by label reaches the site, delivers there, and is read-only there', async () => {
  const hook = {
    name: 'to-sink',
    url: `${sink.url}/edge`,
    topics: ['readings'],
    'site-placement': { 'match-site-labels': 'region = eu' },
    data: '${MSG_PAYLOAD}',
  };
  assert.is((await admin.call('PUT', '/v1/config/volga/webhooks/to-sink', hook)).status, 201);
  site = await spawnApiProc({
    CONTROL_PLANE_URL: cp.url,
    SITE: 'edge-1',
    SITE_TOKEN: token1,
    DATA_DIR: tmp(),
    ADMIN_PASSWORD: 'local-password-ignored-once-synced',
    API_PROC_RUNTIME: '1',
  });
  siteAdmin = client(site.url, password);
  await eventually(() => siteHas('volga/webhooks/to-sink'), 'the exporter synced to edge-1', SITE_WAIT);
  assert.ok(await siteHas('sites/edge-1'), 'its own site object');
  assert.not.ok(await siteHas('sites/edge-2'), "another site's object stays at the control plane");
  const ready = await fleetReadiness(site);
  assert.is(ready.status, 200, 'ready once synced');
  assert.is(ready.check?.ok, true);
  // Local operations work: produce at the site, delivered by the site's exporter.
  await eventually(
    async () => {
      const r = await siteAdmin.call('GET', '/v1/state/volga/webhooks/to-sink');
      return (r.body as { status?: string }).status === 'ready';
    },
    'exporter ready at the site',
    SITE_WAIT,
  );
  const produced = await siteAdmin.call('POST', '/v1/state/volga/topics/readings/produce', { payload: 'hello-edge' });
  assert.is(produced.status, 201, produced.text);
  await sink.waitFor(
    (reqs) => reqs.some((r) => r.body === 'hello-edge' && r.path === '/edge'),
    'delivered at the site',
  );
  // Synced objects are read-only at the site; local objects are not.
  const write = await siteAdmin.call('PUT', '/v1/config/volga/webhooks/to-sink', { ...hook, url: `${sink.url}/x` });
  assert.is(write.status, 409, write.text);
  const errors = (write.body as { errors: Array<{ 'error-info': string }> }).errors;
  assert.is(errors[0]!['error-info'], 'managed-by-control-plane');
  assert.is((await siteAdmin.call('DELETE', '/v1/config/sites/edge-1')).status, 409);
  const local = await siteAdmin.call('PUT', '/v1/config/applications/local-app', { name: 'local-app', version: '1' });
  assert.is(local.status, 201, local.text);
  const restart = await siteAdmin.call('POST', '/v1/state/volga/webhooks/to-sink/restart');
  assert.is(restart.status, 204, restart.text);
});

test("the site's ADMIN_PASSWORD is ignored once synced: the control plane's admin logs in", async () => {
  const local = client(site!.url, 'local-password-ignored-once-synced');
  await local.token().then(
    () => assert.unreachable('the local password still works'),
    (err: unknown) => assert.match(String(err), /401/),
  );
});

test('a change of site labels moves the exporter away within seconds; a change of it reaches the site', async () => {
  assert.is((await admin.call('PATCH', '/v1/config/volga/webhooks/to-sink', { tries: 7 })).status, 204);
  await eventually(
    async () => {
      const r = await siteAdmin.call('GET', '/v1/config/volga/webhooks/to-sink');
      return (r.body as { tries?: number }).tries === 7;
    },
    'the patch reached the site',
    SITE_WAIT,
  );
  assert.is((await admin.call('PATCH', '/v1/config/sites/edge-1', { labels: { region: 'us' } })).status, 204);
  await eventually(async () => !(await siteHas('volga/webhooks/to-sink')), 'the exporter left edge-1', SITE_WAIT);
  assert.ok(await siteHas('applications/local-app'), 'local objects stay');
  await eventually(
    async () => {
      const r = await siteAdmin.call('GET', '/v1/state/volga/webhooks/to-sink');
      return r.status === 404;
    },
    'the exporter stopped at the site',
    SITE_WAIT,
  );
});

test('GET /v1/state/sites/<name>: connection, last-seen, config-version, in-sync', async () => {
  assert.is((await admin.call('PUT', '/v1/config/sites/edge-3', { name: 'edge-3' })).status, 201);
  type Link = { connection?: string; 'last-seen'?: string; 'config-version'?: string; 'in-sync'?: boolean };
  const link = async (name: string) => (await admin.call('GET', `/v1/state/sites/${name}`)).body as Link;
  await eventually(async () => (await link('edge-1'))['in-sync'] === true, 'edge-1 in sync', SITE_WAIT);
  const one = await link('edge-1');
  assert.is(one.connection, 'connected');
  assert.match(one['config-version'] ?? '', /^\d+-\d+$/);
  assert.ok(Date.parse(one['last-seen'] ?? '') > 0, 'last-seen is a time');
  assert.equal(await link('edge-3'), { ...(await link('edge-3')), connection: 'never-connected', 'in-sync': false });
  assert.is((await link('edge-3'))['last-seen'], undefined);
  assert.is((await link('edge-2')).connection, 'disconnected', 'its stream was opened once, then closed');
  // A change the site has not applied yet is not in sync; once applied it is again.
  assert.is((await admin.call('PATCH', '/v1/config/sites/edge-1', { labels: { tier: 'silver' } })).status, 204);
  await eventually(
    async () => {
      const l = await link('edge-1');
      return l['in-sync'] === true && l['config-version'] !== one['config-version'];
    },
    'edge-1 applied the change and acknowledged it',
    SITE_WAIT,
  );
  await site!.stop();
  site = undefined;
  await eventually(async () => (await link('edge-1')).connection === 'disconnected', 'edge-1 disconnected', SITE_WAIT);
});

test.run();
