/**
 * The fleet's view of an exporter at a control plane, in processes on loopback: a control
 * plane on Redis and two edge sites (embedded stores, exporter runtime on) running one
 * exporter; the webhook answers edge-1 and fails edge-2. The control plane's state shows the
 * worst status, the summed counters and a row per site; `site=` still reads one site's view.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnApiProc, type ApiProc } from '../helpers/api-proc.js';
import { freshRedisDb } from '../helpers/redis.js';
import { client, SITE_WAIT, type Client } from '../helpers/fleet.js';
import { tempDir } from '../helpers/backends.js';
import { eventually } from '../helpers/wait.js';
import { startWebhookServer, type WebhookServer } from '../helpers/webhook-server.js';
import { ensurePromtool, promtoolCheck } from '../helpers/promtool.js';

const password = 'fleet-view-password';
const tmp = () => tempDir('edgeplane-fleet-view-');

type Row = { site: string; status: string; delivered: number; 'failed-attempts': number; lag: number } & Record<
  string,
  unknown
>;
type Exporter = { status?: string; delivered?: number; 'failed-attempts'?: number; sites?: Row[]; site?: string };

let cp: ApiProc;
let admin: Client;
const sites: ApiProc[] = [];
const siteAdmins: Client[] = [];
let sink: WebhookServer;
/** Whether the webhook fails edge-2's POSTs. */
let failEdge2 = true;

test.before(async () => {
  // Installed (apt-get, on a fresh machine) before any connection is made: the install blocks
  // this process for a while, and a kept-alive connection the servers closed meanwhile would
  // fail the next request.
  ensurePromtool();
  const redisUrl = await freshRedisDb(6);
  cp = await spawnApiProc({ REDIS_URL: redisUrl, SITE: 'hq', ADMIN_PASSWORD: password, DATA_DIR: tmp() });
  admin = client(cp.url, password);
  sink = await startWebhookServer();
  sink.script((_n, req) => (failEdge2 && req.path === '/edge-2' ? { status: 500, body: 'down' } : { status: 200 }));
  for (const name of ['edge-1', 'edge-2']) {
    const r = await admin.call('PUT', `/v1/config/sites/${name}`, { name, type: 'edge', labels: { region: 'eu' } });
    assert.is(r.status, 201, r.text);
    const token = ((await admin.call('POST', `/v1/state/sites/${name}/issue-token`)).body as { token: string }).token;
    const site = await spawnApiProc({
      CONTROL_PLANE_URL: cp.url,
      SITE: name,
      SITE_TOKEN: token,
      DATA_DIR: tmp(),
      FLEET_REPORT_INTERVAL: '100ms',
      API_PROC_RUNTIME: '1',
    });
    sites.push(site);
    siteAdmins.push(client(site.url, password));
  }
  // A third site that never connects (and runs nothing: region us).
  const r3 = await admin.call('PUT', '/v1/config/sites/edge-3', {
    name: 'edge-3',
    type: 'edge',
    labels: { region: 'us' },
  });
  assert.is(r3.status, 201, r3.text);
  const hook = {
    name: 'to-sink',
    url: `${sink.url}/\${SYS_SITE}`,
    topics: ['readings'],
    'site-placement': { 'match-site-labels': 'region = eu' },
    data: '${MSG_PAYLOAD}',
    'retry-interval': '100ms',
    'max-retry-interval': '200ms',
  };
  assert.is((await admin.call('PUT', '/v1/config/volga/webhooks/to-sink', hook)).status, 201);
  for (const s of siteAdmins)
    await eventually(
      async () => ((await s.call('GET', '/v1/state/volga/webhooks/to-sink')).body as Exporter).status === 'ready',
      'the exporter is ready at each site',
      SITE_WAIT,
    );
});

test.after(async () => {
  for (const p of [...sites, cp]) await p?.stop();
  await sink?.close();
});

const fleetState = async () => {
  const r = await admin.call('GET', '/v1/state/volga/webhooks/to-sink');
  assert.is(r.status, 200, r.text);
  return r.body as Exporter;
};

test('one site failing: the fleet is retrying, counters summed, a row per site from its report', async () => {
  for (const [i, s] of siteAdmins.entries())
    assert.is((await s.call('POST', '/v1/state/volga/topics/readings/produce', { payload: `m-${i}` })).status, 201);
  await sink.waitFor((reqs) => reqs.some((r) => r.path === '/edge-1' && r.status === 200), 'edge-1 delivered');
  let st: Exporter = {};
  await eventually(
    async () => {
      st = await fleetState();
      const rows = st.sites ?? [];
      return (
        st.status === 'retrying' &&
        rows.find((r) => r.site === 'edge-1')?.delivered === 1 &&
        (rows.find((r) => r.site === 'edge-2')?.['failed-attempts'] ?? 0) >= 1 &&
        rows.find((r) => r.site === 'edge-2')?.lag === 1
      );
    },
    () => `the fleet view shows edge-2 retrying and edge-1's delivery: ${JSON.stringify(st)}`,
    SITE_WAIT,
  );
  const rows = st.sites ?? [];
  assert.equal(
    rows.map((r) => r.site),
    ['edge-1', 'edge-2'],
    'placed on the two edge sites (not on hq)',
  );
  const [e1, e2] = rows as [Row, Row];
  assert.is(e1.status, 'ready');
  assert.is(e2.status, 'retrying');
  assert.match(String(e2['last-error']), /500/);
  assert.ok(typeof e2['last-error-time'] === 'string');
  assert.ok(Date.parse(String(e1['reported-at'])) > 0, 'each row has its report time');
  assert.equal([e1.connection, e2.connection], ['connected', 'connected']);
  assert.is(e2.lag, 1, 'the failing message is edge-2 lag');
  assert.is(st.delivered, e1.delivered + e2.delivered);
  assert.is(st['failed-attempts'], e1['failed-attempts'] + e2['failed-attempts']);
  // site= still reads one site's own view.
  const one = (await admin.call('GET', '/v1/state/volga/webhooks/to-sink?site=edge-1')).body as Exporter;
  assert.is(one.status, 'ready');
  assert.is(one.sites, undefined);
  // Lists and where see the fleet's status too.
  const retrying = await admin.call(
    'GET',
    `/v1/state/volga/webhooks?count&where=${encodeURIComponent('status = "retrying"')}`,
  );
  assert.equal(retrying.body, { count: 1 });
});

test('the webhook recovers: ready everywhere, both deliveries summed', async () => {
  failEdge2 = false;
  let st: Exporter = {};
  await eventually(
    async () => {
      st = await fleetState();
      return st.status === 'ready' && st.delivered === 2 && (st.sites ?? []).every((r) => r.status === 'ready');
    },
    () => `the fleet is ready with 2 delivered: ${JSON.stringify(st)}`,
    SITE_WAIT,
  );
});

test('/metrics at the control plane: sites by connection, change lag and last-seen age; promtool-clean everywhere', async () => {
  const sample = (text: string, name: string, label: string) => {
    const m = new RegExp(`^${name}\\{${label}\\} (\\S+)$`, 'm').exec(text);
    return m ? Number(m[1]) : undefined;
  };
  let text = '';
  await eventually(
    async () => {
      text = await (await fetch(`${cp.url}/metrics`)).text();
      return (
        sample(text, 'edgeplane_fleet_sites', 'connection="connected"') === 2 &&
        sample(text, 'edgeplane_fleet_site_change_lag', 'site="edge-1"') === 0 &&
        sample(text, 'edgeplane_fleet_site_change_lag', 'site="edge-2"') === 0
      );
    },
    () =>
      `two sites connected and in sync:\n${text
        .split('\n')
        .filter((l) => l.includes('fleet'))
        .join('\n')}`,
    SITE_WAIT,
  );
  assert.is(sample(text, 'edgeplane_fleet_sites', 'connection="never-connected"'), 1);
  assert.is(sample(text, 'edgeplane_fleet_sites', 'connection="disconnected"'), 0);
  assert.ok(
    (sample(text, 'edgeplane_fleet_site_change_lag', 'site="edge-3"') ?? 0) >= 1,
    'edge-3 never took its changes',
  );
  for (const site of ['edge-1', 'edge-2']) {
    const age = sample(text, 'edgeplane_fleet_site_last_seen_seconds', `site="${site}"`);
    assert.ok(age !== undefined && age >= 0 && age < 60, `${site} seen recently: ${age}`);
  }
  assert.is(sample(text, 'edgeplane_fleet_site_last_seen_seconds', 'site="edge-3"'), undefined, 'never heard');
  assert.not.match(text, /site="hq"/, "the control plane's own site is not an edge site");
  // Every text read first, then checked (promtool runs synchronously).
  const urls = [cp.url, ...sites.map((s) => s.url)];
  const bodies = await Promise.all(urls.map(async (url) => (await fetch(`${url}/metrics`)).text()));
  urls.forEach((url, i) => {
    const check = promtoolCheck(bodies[i]!);
    assert.is(check.status, 0, `promtool check metrics on ${url}/metrics: ${check.output}`);
  });
});

test('a site that stops: its row is its last report, marked disconnected (not shown as live)', async () => {
  await sites[1]!.stop();
  let st: Exporter = {};
  await eventually(
    async () => {
      st = await fleetState();
      return (st.sites ?? []).find((r) => r.site === 'edge-2')?.connection === 'disconnected';
    },
    () => `edge-2's row says disconnected: ${JSON.stringify(st)}`,
    SITE_WAIT,
  );
  const e2 = (st.sites ?? []).find((r) => r.site === 'edge-2')!;
  assert.is(e2.status, 'ready', 'its status is the one it last reported');
  assert.is((st.sites ?? []).find((r) => r.site === 'edge-1')?.connection, 'connected');
});

test('placed on this site only: its own view; placed nowhere: stopped', async () => {
  let r = await admin.call('PUT', '/v1/config/volga/webhooks/to-sink', {
    name: 'to-sink',
    url: `${sink.url}/hq`,
    topics: ['readings'],
    'site-placement': { sites: ['hq'] },
    data: '${MSG_PAYLOAD}',
  });
  assert.is(r.status, 204, r.text);
  const own = await fleetState();
  assert.is(own.sites, undefined, 'a control plane running it alone shows its own state');
  r = await admin.call('PUT', '/v1/config/volga/webhooks/to-sink', {
    name: 'to-sink',
    url: `${sink.url}/none`,
    topics: ['readings'],
    'site-placement': { 'match-site-labels': 'region = nowhere' },
    data: '${MSG_PAYLOAD}',
  });
  assert.is(r.status, 204, r.text);
  const nowhere = await fleetState();
  assert.is(nowhere.status, 'stopped');
  assert.equal(nowhere.sites, [], 'placed on no site: an empty list of sites says so');
});

test.run();
