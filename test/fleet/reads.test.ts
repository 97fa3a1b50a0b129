/**
 * `site=` reads, state reports and bookmarks, in processes on loopback: two control-plane
 * processes (A and B) on one real Redis, an edge site (embedded store, exporter runtime on)
 * connected to A through a TCP proxy, and a hand-made site that holds a sync stream but never
 * answers. A write on B reaches the site; a `site=` read on B travels down A's stream and comes
 * back live; cut off, the site's last report (in Redis) answers with `x-state-age`.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createClient } from 'redis';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnApiProc, type ApiProc } from '../helpers/api-proc.js';
import { freshRedisDb } from '../helpers/redis.js';
import { client, startTcpProxy, SITE_WAIT, type Client, type TcpProxy } from '../helpers/fleet.js';
import { tempDir } from '../helpers/backends.js';
import { eventually } from '../helpers/wait.js';
import { startWebhookServer, type WebhookServer } from '../helpers/webhook-server.js';
import { generateSiteKey } from '../../src/secrets/sealed.js';

const password = 'fleet-reads-password';
const tmp = () => tempDir('edgeplane-fleet-reads-');

type ErrorBody = { errors: Array<{ 'error-message': string; 'error-info': string }> };
/** The events of a Server-Sent Events text: {event, id, data} each. */
function sseEvents(text: string): Array<{ event?: string; id?: string; data: string }> {
  return text
    .split('\n\n')
    .filter((block) => block.trim() && !block.startsWith(':'))
    .map((block) => {
      const ev: { event?: string; id?: string; data: string } = { data: '' };
      for (const line of block.split('\n')) {
        const m = /^(event|id|data): ?(.*)$/.exec(line);
        if (m?.[1] === 'data') ev.data += m[2];
        else if (m?.[1] === 'event' || m?.[1] === 'id') ev[m[1]] = m[2];
      }
      return ev;
    });
}

const ready = encodeURIComponent('status = "ready"');
const codeOf = (body: unknown) => (body as ErrorBody).errors?.[0]?.['error-info'];

let redisUrl = '';
let cpA: ApiProc;
let cpB: ApiProc;
let adminA: Client;
let adminB: Client;
let proxy: TcpProxy;
let site: ApiProc;
let siteAdmin: Client;
let sink: WebhookServer;
let token1 = '';

const hook = (url: string) => ({
  name: 'to-sink',
  url,
  topics: ['readings'],
  'site-placement': { 'match-site-labels': 'region = eu' },
  data: '${MSG_PAYLOAD}',
});

test.before(async () => {
  redisUrl = await freshRedisDb(5);
  // The two control-plane processes share the secret store's key, as processes on one Redis must.
  const key = randomBytes(32).toString('base64');
  const cp = {
    REDIS_URL: redisUrl,
    SITE: 'hq',
    ADMIN_PASSWORD: password,
    FLEET_KEEPALIVE: '300ms',
    STRONGBOX_KEY: key,
  };
  cpA = await spawnApiProc({ ...cp, DATA_DIR: tmp() });
  cpB = await spawnApiProc({ ...cp, DATA_DIR: tmp() });
  adminA = client(cpA.url, password);
  adminB = client(cpB.url, password);
  sink = await startWebhookServer();
  for (const [name, labels] of [
    ['edge-1', { region: 'eu' }],
    ['edge-2', { region: 'us' }],
  ] as const) {
    const r = await adminB.call('PUT', `/v1/config/sites/${name}`, { name, type: 'edge', labels });
    assert.ok(r.status === 201 || r.status === 204, `site ${name}: ${r.status} ${r.text}`);
  }
  token1 = ((await adminB.call('POST', '/v1/state/sites/edge-1/issue-token')).body as { token: string }).token;
  proxy = await startTcpProxy(cpA.port);
  site = await spawnApiProc({
    CONTROL_PLANE_URL: `http://127.0.0.1:${proxy.port}`,
    SITE: 'edge-1',
    SITE_TOKEN: token1,
    DATA_DIR: tmp(),
    FLEET_REPORT_INTERVAL: '100ms',
    API_PROC_RUNTIME: '1',
    // Its link's log lines are checked (the failures while cut off, and their end).
    LOG_LEVEL: 'info',
  });
  siteAdmin = client(site.url, password);
});

test.after(async () => {
  for (const p of [site, cpA, cpB]) await p?.stop();
  await proxy?.close();
  await sink?.close();
});

type Exporter = { name?: string; status?: string; site?: string; delivered?: number; url?: string };

test('a write on control plane B reaches the site connected to A (fan-out through Redis)', async () => {
  assert.is((await adminB.call('PUT', '/v1/config/volga/webhooks/to-sink', hook(`${sink.url}/edge`))).status, 201);
  await eventually(
    async () => (await siteAdmin.call('GET', '/v1/config/volga/webhooks/to-sink')).status === 200,
    'the exporter written on B is at the site',
    SITE_WAIT,
  );
  await eventually(
    async () => {
      const r = await siteAdmin.call('GET', '/v1/state/volga/webhooks/to-sink');
      return (r.body as Exporter).status === 'ready';
    },
    'exporter ready at the site',
    SITE_WAIT,
  );
  const link = (await adminA.call('GET', '/v1/state/sites/edge-1')).body as { connection?: string };
  assert.is(link.connection, 'connected');
});

test('site= on B is forwarded live to the site held by A, which applies its own read rules', async () => {
  // This control plane does not run the exporter (its state here is "starting", site hq's).
  const own = (await adminB.call('GET', '/v1/state/volga/webhooks/to-sink')).body as Exporter;
  assert.is.not(own.site, 'edge-1');
  const produced = await siteAdmin.call('POST', '/v1/state/volga/topics/readings/produce', { payload: 'live-1' });
  assert.is(produced.status, 201, produced.text);
  await sink.waitFor((reqs) => reqs.some((r) => r.body === 'live-1'), 'delivered at the site');
  let live: Exporter = {};
  await eventually(
    async () => {
      const r = await adminB.call('GET', '/v1/state/volga/webhooks/to-sink?site=edge-1');
      assert.is(r.status, 200, r.text);
      assert.is(r.headers.get('x-state-age'), null, 'a live answer has no age');
      live = r.body as Exporter;
      return (live.delivered ?? 0) >= 1;
    },
    'the live read shows the delivery counted at the site',
    SITE_WAIT,
  );
  assert.is(live.site, 'edge-1');
  assert.is(live.status, 'ready');
  // fields, where, count and keys are the site's own query language, applied there.
  const fields = await adminB.call('GET', '/v1/state/volga/webhooks/to-sink?site=edge-1&fields=name,status');
  assert.equal(fields.body, { name: 'to-sink', status: 'ready' });
  const count = await adminB.call('GET', `/v1/state/volga/webhooks?site=edge-1&where=${ready}&count`);
  assert.equal(count.body, { count: 1 });
  const none = await adminB.call(
    'GET',
    `/v1/state/volga/webhooks/to-sink?site=edge-1&where=${encodeURIComponent('status = "stopped"')}`,
  );
  assert.is(none.status, 404);
  assert.is(codeOf(none.body), 'no-match');
  const topics = await adminB.call('GET', '/v1/state/volga/topics?site=edge-1&keys');
  assert.ok((topics.body as string[]).includes('readings'), topics.text);
  const all = await adminB.call('GET', '/v1/state?site=edge-1');
  const paths = (all.body as Array<{ 'x-path': string }>).map((o) => o['x-path']);
  assert.ok(paths.includes('/v1/state/volga/webhooks/to-sink'), paths.join(' '));
  assert.ok(paths.includes('/v1/state/sites/edge-1'), 'the site object synced to it');
  assert.not.ok(paths.includes('/v1/state/sites/edge-2'), "another site's object is not at edge-1");
  const yaml = await adminB.call('GET', '/v1/state/volga/webhooks/to-sink?site=edge-1&fields=name', undefined, {
    accept: 'application/yaml',
  });
  assert.is(yaml.text.trim(), 'name: to-sink');
  // Naming the serving site answers locally; an unknown site is 404 in the error format.
  const hq = await adminB.call('GET', '/v1/state/volga/webhooks/to-sink?site=hq');
  assert.is(hq.status, 200);
  assert.is.not((hq.body as Exporter).site, 'edge-1');
  const twice = await adminB.call('GET', '/v1/state/volga/webhooks/to-sink?site=edge-1&site=hq');
  assert.is(twice.status, 400, twice.text);
  assert.is(codeOf(twice.body), 'duplicate-parameter');
  const unknown = await adminB.call('GET', '/v1/state/volga/webhooks?site=nowhere');
  assert.is(unknown.status, 404);
  assert.is(codeOf(unknown.body), 'unknown-site');
  const watch = await adminB.call('GET', '/v1/state/volga/webhooks?site=edge-1&watch');
  assert.is(watch.status, 400);
  assert.is(codeOf(watch.body), 'conflicting-parameters');
});

test("site= answered live holds only what the caller's policies let it read (a list, count, keys)", async () => {
  // viewer may read the list of exporters, but not the exporter to-sink.
  const policy = {
    name: 'list-only',
    rules: [
      { path: '/v1/state/volga/webhooks', operations: ['read'], effect: 'allow' },
      { path: '/v1/state/volga/webhooks/to-sink', operations: ['read'], effect: 'deny' },
      { path: '/v1/state/volga/webhooks/*', operations: ['read'], effect: 'allow' },
    ],
  };
  assert.is((await adminB.call('PUT', '/v1/config/system/policies/list-only', policy)).status, 201);
  const user = { name: 'viewer', password: 'viewer-password-1', policies: ['list-only'] };
  assert.is((await adminB.call('PUT', '/v1/config/system/users/viewer', user)).status, 201);
  const viewer = client(cpB.url, 'viewer-password-1', 'viewer');
  // The admin sees to-sink at edge-1, live.
  const all = await adminB.call('GET', '/v1/state/volga/webhooks?site=edge-1&keys');
  assert.ok((all.body as string[]).includes('to-sink'), all.text);
  const one = await viewer.call('GET', '/v1/state/volga/webhooks/to-sink?site=edge-1');
  assert.is(one.status, 403, one.text);
  const list = await viewer.call('GET', '/v1/state/volga/webhooks?site=edge-1&fields=name,url');
  assert.is(list.status, 200, list.text);
  assert.is(list.headers.get('x-state-age'), null, 'answered live');
  assert.equal(list.body, []);
  assert.equal((await viewer.call('GET', '/v1/state/volga/webhooks?site=edge-1&keys')).body, []);
  assert.equal((await viewer.call('GET', '/v1/state/volga/webhooks?site=edge-1&count')).body, { count: 0 });
});

test("the site's report is acknowledged and kept in Redis with its time", async () => {
  const r = createClient({ url: redisUrl });
  await r.connect();
  try {
    let doc: { time?: string; tenants?: Record<string, Array<{ path: string; value: Exporter }>> } = {};
    await eventually(
      async () => {
        const text = await r.get('ep:kv:fleet:report:edge-1');
        doc = text ? (JSON.parse(text) as typeof doc) : {};
        const mine = doc.tenants?.default?.find((i) => i.path === 'volga/webhooks/to-sink');
        return (mine?.value.delivered ?? 0) >= 1;
      },
      'a report with the delivery is stored',
      SITE_WAIT,
    );
    assert.ok(Date.parse(doc.time ?? '') > 0, 'the report has its time');
    const text = JSON.stringify(doc);
    assert.not.ok(text.includes('volga/topics/'), 'topics are live only');
  } finally {
    await r.quit();
  }
});

test('cut off: site= on B answers the last report with x-state-age; live-only paths are 503', async () => {
  // One more delivery, reported before the cut.
  await siteAdmin.call('POST', '/v1/state/volga/topics/readings/produce', { payload: 'live-2' });
  await sink.waitFor((reqs) => reqs.some((r) => r.body === 'live-2'), 'second delivery');
  await eventually(
    async () => {
      const r = await adminB.call('GET', '/v1/state/volga/webhooks/to-sink?site=edge-1');
      return (r.body as Exporter).delivered === 2;
    },
    'the control plane sees both deliveries',
    SITE_WAIT,
  );
  await eventually(
    async () => {
      const r = createClient({ url: redisUrl });
      await r.connect();
      const text = await r.get('ep:kv:fleet:report:edge-1');
      await r.quit();
      return (text ?? '').includes('"delivered":2');
    },
    'the report holds both deliveries',
    SITE_WAIT,
  );
  // A watch of the site's state follows its connection (derived from presence: no notification).
  const watchAbort = new AbortController();
  const watched = await fetch(`${cpB.url}/v1/state/sites/edge-1?watch&fields=name,connection`, {
    headers: { authorization: `Bearer ${await adminB.token()}` },
    signal: watchAbort.signal,
  });
  let streamed = '';
  const reading = (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of watched.body!) streamed += decoder.decode(chunk as Uint8Array, { stream: true });
  })().catch(() => undefined);
  await proxy.cut();
  await eventually(
    async () =>
      ((await adminB.call('GET', '/v1/state/sites/edge-1')).body as { connection?: string }).connection ===
      'disconnected',
    'edge-1 disconnected',
    SITE_WAIT,
  );
  await eventually(
    async () => /event: change\ndata: \{[^\n]*"connection":"disconnected"/.test(streamed),
    () => `the watch sent the disconnection: ${streamed}`,
    SITE_WAIT,
  );
  watchAbort.abort();
  await reading;
  const stale = await adminB.call('GET', '/v1/state/volga/webhooks/to-sink?site=edge-1');
  assert.is(stale.status, 200, stale.text);
  const age = stale.headers.get('x-state-age');
  assert.match(age ?? '', /^\d+$/);
  assert.is((stale.body as Exporter).delivered, 2);
  assert.is((stale.body as Exporter).site, 'edge-1');
  // The same read rules on the report: fields, where, count, content, the root read.
  const fields = await adminA.call('GET', '/v1/state/volga/webhooks/to-sink?site=edge-1&fields=name,delivered');
  assert.equal(fields.body, { name: 'to-sink', delivered: 2 });
  assert.match(fields.headers.get('x-state-age') ?? '', /^\d+$/);
  const count = await adminB.call('GET', `/v1/state/volga/webhooks?site=edge-1&where=${ready}&count`);
  assert.equal(count.body, { count: 1 });
  const config = await adminB.call('GET', '/v1/state/volga/webhooks/to-sink?site=edge-1&content=config');
  assert.is((config.body as Exporter).delivered, undefined, 'content=config drops runtime fields');
  assert.is((config.body as Exporter).url, `${sink.url}/edge`);
  const all = await adminB.call('GET', '/v1/state?site=edge-1');
  assert.ok(
    (all.body as Array<{ 'x-path': string }>).some((o) => o['x-path'] === '/v1/state/volga/webhooks/to-sink'),
    all.text,
  );
  // ctl says so on stderr (stdout stays the data): the last report is not what the site does now.
  const creds = join(tmp(), 'credentials');
  writeFileSync(creds, JSON.stringify({ [cpB.url]: { token: await adminB.token() } }));
  const got = await new Promise<{ code: number | null; stdout: string; stderr: string }>((done) =>
    execFile(
      process.execPath,
      ['--import', 'tsx', 'worker.ts', 'ctl', 'get', 'state/volga/webhooks/to-sink', '--site', 'edge-1'],
      { env: { ...process.env, EDGEPLANE_URL: cpB.url, EDGEPLANE_CREDENTIALS: creds }, timeout: 60_000 },
      (err, stdout, stderr) => done({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
    ),
  );
  assert.is(got.code, 0, got.stderr);
  assert.match(got.stderr, /^site edge-1 is not connected: this is its last report, \d+ s old \(x-state-age\)$/m);
  assert.match(got.stdout, /^delivered: 2$/m);
  const topics = await adminB.call('GET', '/v1/state/volga/topics?site=edge-1');
  assert.is(topics.status, 503);
  assert.is(codeOf(topics.body), 'site-unreachable');
  // The site itself keeps running on its own meanwhile.
  await siteAdmin.call('POST', '/v1/state/volga/topics/readings/produce', { payload: 'offline-1' });
  await sink.waitFor((reqs) => reqs.some((r) => r.body === 'offline-1'), 'delivered while cut off');
  await proxy.restore();
  await eventually(
    async () => {
      const r = await adminB.call('GET', '/v1/state/volga/webhooks/to-sink?site=edge-1');
      return r.headers.get('x-state-age') === null && (r.body as Exporter).delivered === 3;
    },
    'back online: live again, with the delivery made while cut off',
    SITE_WAIT,
  );
  // The site's log says the link is back (it logged each failed attempt while cut off).
  await eventually(
    () =>
      /"msg":"fleet: connected to the control plane again","site":"edge-1","failed-attempts":\d+/.test(site.output()),
    () => `the site logs its reconnection: ${site.output().slice(-2000)}`,
    SITE_WAIT,
  );
});

test('a connected site that does not answer: after 5 s, its last report (or 503 without one)', async () => {
  const token2 = ((await adminA.call('POST', '/v1/state/sites/edge-2/issue-token')).body as { token: string }).token;
  const abort = new AbortController();
  const res = await fetch(`${cpA.url}/v1/fleet/sites/edge-2/sync`, {
    headers: { authorization: `Bearer ${token2}`, 'x-edgeplane-site-key': generateSiteKey().publicKey },
    signal: abort.signal,
  });
  assert.is(res.status, 200);
  let seen = '';
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  const reading = (async () => {
    for (let i = 0; i < 10_000; i++) {
      const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
      if (done) return;
      seen += dec.decode(value, { stream: true });
    }
  })();
  try {
    await eventually(
      async () =>
        ((await adminB.call('GET', '/v1/state/sites/edge-2')).body as { connection?: string }).connection ===
        'connected',
      'edge-2 connected',
      SITE_WAIT,
    );
    const never = await adminB.call('GET', '/v1/state/sites?site=edge-2');
    assert.is(never.status, 503, never.text);
    assert.is(codeOf(never.body), 'site-unreachable');
    // The read did travel down the stream, as a request event with its tenant, path and query,
    // and the caller's read rules (the admin's: everything).
    const events = sseEvents(seen);
    const request = events.find((e) => e.event === 'request');
    assert.ok(request, 'a request event');
    assert.equal(
      { ...(JSON.parse(request.data) as object), id: 'x' },
      {
        id: 'x',
        tenant: 'default',
        path: '/v1/state/sites',
        query: '',
        rules: [{ path: '/**', effect: 'allow' }],
      },
    );
    // Bookmarks: the version the stream is at, with the keep-alive.
    const snapshotId = events.find((e) => e.event === 'snapshot')?.id;
    assert.match(snapshotId ?? '', /^\d+-\d+$/);
    const bookmark = events.find((e) => e.event === 'bookmark');
    assert.equal(bookmark, { event: 'bookmark', id: snapshotId, data: JSON.stringify({ version: snapshotId }) });
    // A report by hand (the site's own token only), then the same read answers it after the wait.
    const report = {
      tenants: {
        default: [
          { path: 'sites/edge-2', value: { name: 'edge-2', labels: { region: 'us' } }, config: ['name'] },
          { path: 'system/users/eve', value: { name: 'eve', 'password-hash': 'scrypt$x' }, config: ['name'] },
        ],
      },
    };
    const post = (path: string, body: unknown, tok = token2) =>
      fetch(`${cpB.url}/v1/fleet/sites/edge-2/${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tok}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    assert.is((await post('report', report, token1)).status, 403, "edge-1's token cannot report for edge-2");
    assert.is((await post('report', report, await adminB.token())).status, 401, 'a user token is no site token');
    const bad = await post('report', { tenants: [] });
    assert.is(bad.status, 400);
    assert.is(codeOf(await bad.json()), 'schema-required');
    assert.is((await post('answer', { id: 'x', status: 'ok' })).status, 400);
    assert.is((await post('report', report)).status, 204);
    const stale = await adminB.call('GET', '/v1/state/sites?site=edge-2&content=nonconfig');
    assert.is(stale.status, 200, stale.text);
    assert.match(stale.headers.get('x-state-age') ?? '', /^\d+$/);
    assert.equal(stale.body, [{ name: 'edge-2', labels: { region: 'us' } }]);
    // What a site reports is redacted again at the control plane: no password hash is shown.
    const eve = await adminB.call('GET', '/v1/state/system/users/eve?site=edge-2');
    assert.is(eve.status, 200, eve.text);
    assert.not.ok(eve.text.includes('scrypt'), eve.text);
  } finally {
    abort.abort();
    await reading;
  }
});

test('a site token reads nothing through site=: it is not a user token', async () => {
  const r = await adminB.call('GET', '/v1/state/volga/webhooks?site=edge-1', undefined, {
    authorization: `Bearer ${token1}`,
  });
  assert.is(r.status, 401);
});

test.run();
