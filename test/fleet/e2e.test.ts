/**
 * The fleet end to end, every process real, on loopback: a control plane on the test Redis and
 * three edge sites — edge-r on a redis-server of its own, edge-a and edge-b on the embedded
 * store — each reaching the control plane through a TCP proxy of its own (test/helpers/fleet.ts)
 * and delivering to a webhook sink of its own (the exporters' URL names the sink's port through
 * the site label `sink`, so one exporter placed on several sites delivers to each site's sink).
 *
 * 1. Every placement form (all sites, a list of sites, labels, an application deployment) puts
 *    exactly what applies on each site, and the exporters deliver there.
 * 2. A change of site labels, of a deployment and of a list of sites moves exporters between
 *    sites (the time it takes is printed; the bound asserted is a generous 10 s).
 * 3. edge-a is cut off (its proxy stopped) for 30 s while 100 changes are made: it keeps
 *    delivering, is killed (-9) and restarted while cut off and still serves its API and runs
 *    its exporters; the other sites stay in sync; once the proxy is back it catches up.
 * 4. The control plane is killed (-9) and restarted: every site reconnects and catches up.
 * 5. edge-b, then edge-r, is killed (-9) in the middle of a burst of changes, restarted, and
 *    catches up (a site on each store).
 *
 * "Caught up" is checked, every time, against the control plane's own view: what applies to
 * the site computed from the control plane's Redis (fleet/control/applicable.ts, not the projector),
 * equal to the projector's materialised set, and every one of those objects read from the
 * site's API equal to the same read at the control plane, with nothing more at the site.
 * "Nothing lost or repeated" is checked on each site's log of applied versions across all its
 * lives: strictly increasing (no version twice), and every version of its change log after the
 * first applied (at most one per kill -9 of that site missing from the log: a change committed
 * the instant before the kill, before its log line).
 */
import { performance } from 'node:perf_hooks';
import { isDeepStrictEqual } from 'node:util';
import { createClient } from 'redis';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { applicableTo } from '../../src/fleet/control/applicable.js';
import type { JsonObject } from '../../src/lib/json.js';
import { tempDir } from '../helpers/backends.js';
import { spawnApiProc, type ApiProc } from '../helpers/api-proc.js';
import { client, SITE_WAIT, startTcpProxy, type Client, type TcpProxy } from '../helpers/fleet.js';
import { freePort, freshRedisDb, startRedis, type RedisServer } from '../helpers/redis.js';
import { eventually } from '../helpers/wait.js';
import { startWebhookServer, type WebhookServer } from '../helpers/webhook-server.js';

const password = 'fleet-e2e-password';
const root = 'default';
const siteNames = ['edge-r', 'edge-a', 'edge-b'] as const;
type SiteName = (typeof siteNames)[number];

const live = new Set<ApiProc>();
process.once('exit', () => {
  for (const p of live) p.child.kill('SIGKILL');
});
const tmp = () => tempDir('edgeplane-fleet-e2e-');
const say = (line: string) => process.stdout.write(`  [fleet-e2e] ${line}\n`);

type Site = {
  name: SiteName;
  labels: Record<string, string>;
  proxy: TcpProxy;
  sink: WebhookServer;
  dir: string;
  redis?: RedisServer;
  token: string;
  proc?: ApiProc;
  api: Client;
  /** Output of the site's earlier (killed or stopped) processes. */
  past: string;
  kills: number;
};

let cpRedisUrl = '';
let cpPort = 0;
let cpDir = '';
let cp: ApiProc;
let admin: Client;
const sites = {} as Record<SiteName, Site>;

async function startCp(): Promise<void> {
  cp = await spawnApiProc({
    REDIS_URL: cpRedisUrl,
    PORT: String(cpPort),
    SITE: 'hq',
    ADMIN_PASSWORD: password,
    DATA_DIR: cpDir,
  });
  live.add(cp);
}

async function startSite(s: Site): Promise<void> {
  s.proc = await spawnApiProc({
    CONTROL_PLANE_URL: `http://127.0.0.1:${s.proxy.port}`,
    SITE: s.name,
    SITE_TOKEN: s.token,
    DATA_DIR: s.dir,
    ...(s.redis ? { REDIS_URL: s.redis.url } : {}),
    ADMIN_PASSWORD: 'site-local-password',
    API_PROC_RUNTIME: '1',
    LOG_LEVEL: 'info',
  });
  live.add(s.proc);
  s.api = client(s.proc.url, password);
}

function kill9(p: ApiProc): Promise<void> {
  live.delete(p);
  return new Promise((resolve) => {
    if (p.child.exitCode !== null) return resolve();
    p.child.once('exit', () => resolve());
    p.child.kill('SIGKILL');
  });
}

async function killSite(s: Site): Promise<void> {
  await kill9(s.proc!);
  s.past += s.proc!.output();
  s.kills++;
}

async function withRedis<T>(url: string, fn: (c: ReturnType<typeof createClient>) => Promise<T>): Promise<T> {
  const c = createClient({ url });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.quit();
  }
}

/** The control plane's whole configuration, read from its Redis (key → object). */
async function cpConfig(): Promise<Map<string, JsonObject>> {
  return withRedis(cpRedisUrl, async (c) => {
    const out = new Map<string, JsonObject>();
    for await (const batch of c.scanIterator({ MATCH: 'ep:cfg:*', COUNT: 500 })) {
      for (const redisKey of Array.isArray(batch) ? batch : [batch]) {
        const v = await c.hGet(redisKey, 'v');
        if (v) out.set(redisKey.slice('ep:cfg:'.length), JSON.parse(v) as JsonObject);
      }
    }
    return out;
  });
}

const pathOf = (key: string) => {
  assert.ok(key.startsWith(`${root}/`), `a root-tenant key: ${key}`);
  return key.slice(root.length + 1);
};

type Link = { connection?: string; 'config-version'?: string; 'in-sync'?: boolean };
const link = async (name: string) => (await admin.call('GET', `/v1/state/sites/${name}`)).body as Link;

/**
 * Waits until the projector has projected the control plane's configuration for the site
 * (its set equals what applies: the projector runs after commits, so just after a restart
 * the last commits may not be in the log yet) and the site acknowledged the head of its change
 * log, then compares its synced configuration with the control plane's view of it. Returns the
 * wait in ms.
 */
async function caughtUp(s: Site, what: string, timeoutMs = 60_000): Promise<number> {
  const t0 = performance.now();
  await eventually(
    async () => {
      const want = applicableTo(await cpConfig(), s.name, root);
      const set = await withRedis(cpRedisUrl, (c) => c.hGetAll(`ep:fleet:${s.name}:set`));
      if (Object.keys(set).length !== want.size) return false;
      for (const [key, value] of want)
        if (set[key] === undefined || !isDeepStrictEqual(JSON.parse(set[key]), value)) return false;
      const head = await withRedis(cpRedisUrl, (c) => c.hGet(`ep:fleet:${s.name}:meta`, 'head'));
      const l = await link(s.name);
      return l['in-sync'] === true && l['config-version'] === head;
    },
    `${what}: ${s.name} acknowledges the head of its change log`,
    { ...SITE_WAIT, timeoutMs },
  );
  const ms = Math.round(performance.now() - t0);
  // The control plane's view: what applies to the site, from its configuration.
  const expected = applicableTo(await cpConfig(), s.name, root);
  const projected = await withRedis(cpRedisUrl, (c) => c.hGetAll(`ep:fleet:${s.name}:set`));
  assert.equal(
    Object.keys(projected).sort(),
    [...expected.keys()].sort(),
    `${what}: the projector's set for ${s.name}`,
  );
  for (const [key, value] of expected) assert.equal(JSON.parse(projected[key]!), value, `${what}: projected ${key}`);
  // The site's synced configuration, read from its API, object by object.
  for (const key of expected.keys()) {
    const path = `/v1/config/${pathOf(key)}`;
    const [atSite, atCp] = [await s.api.call('GET', path), await admin.call('GET', path)];
    assert.is(atSite.status, 200, `${what}: ${s.name} has ${path}`);
    assert.equal(atSite.body, atCp.body, `${what}: ${path} at ${s.name} equals the control plane's`);
  }
  // And nothing more of the placed kinds.
  for (const kind of ['volga/webhooks', 'application-deployments', 'applications', 'sites']) {
    const want = [...expected.keys()].filter((k) => k.startsWith(`${root}/${kind}/`)).map((k) => k.split('/').pop());
    assert.equal(await namesAt(s.api, kind), want.sort(), `${what}: ${kind} at ${s.name}`);
  }
  return ms;
}

async function namesAt(api: Client, kind: string): Promise<string[]> {
  const r = await api.call('GET', `/v1/config/${kind}`);
  assert.is(r.status, 200, `list ${kind}: ${r.text}`);
  const list = r.body as Array<{ name: string } | string>;
  return list.map((o) => (typeof o === 'string' ? o : o.name)).sort();
}

/** The versions a site logged applying, across all its processes. */
function appliedLog(s: Site): Array<{ kind: string; version: string }> {
  const out: Array<{ kind: string; version: string }> = [];
  for (const line of (s.past + (s.proc?.output() ?? '')).split('\n')) {
    if (!line.includes('"fleet: applied ')) continue;
    const l = JSON.parse(line) as { msg: string; version: string };
    out.push({ kind: l.msg.slice('fleet: applied '.length), version: l.version });
  }
  return out;
}

const cmp = (a: string, b: string) => {
  const [am, as] = a.split('-').map(Number) as [number, number];
  const [bm, bs] = b.split('-').map(Number) as [number, number];
  return am !== bm ? am - bm : as - bs;
};

/** No version applied twice, none lost: checked against the site's change log at the control plane. */
async function exactlyOnce(s: Site, what: string): Promise<void> {
  const applied = appliedLog(s);
  assert.ok(applied.length > 0, `${what}: ${s.name} logged what it applied`);
  for (let i = 1; i < applied.length; i++)
    assert.ok(
      cmp(applied[i - 1]!.version, applied[i]!.version) < 0,
      `${what}: ${s.name} applied ${applied[i]!.version} after ${applied[i - 1]!.version} (repeated or out of order)`,
    );
  const log = await withRedis(cpRedisUrl, (c) => c.xRange(`ep:fleet:${s.name}:log`, '-', '+'));
  const ids = new Set(log.map((e) => e.id));
  for (const a of applied.filter((x) => x.kind === 'change'))
    assert.ok(ids.has(a.version), `${what}: ${s.name} applied ${a.version}, an entry of its change log`);
  const seen = new Set(applied.map((a) => a.version));
  const missing = log.filter((e) => cmp(e.id, applied[0]!.version) > 0 && !seen.has(e.id)).map((e) => e.id);
  assert.ok(
    missing.length <= s.kills,
    `${what}: ${s.name} never logged applying ${missing.join(', ')} (${s.kills} kill -9 so far)`,
  );
  say(
    `${what}: ${s.name} applied ${applied.length} versions in order, each once (${log.length} in its log, ` +
      `${missing.length} committed at a kill -9 before its log line)`,
  );
}

async function exporterStatus(s: Site, name: string): Promise<string | number> {
  const r = await s.api.call('GET', `/v1/state/volga/webhooks/${name}`);
  return r.status === 200 ? ((r.body as { status?: string }).status ?? 'none') : r.status;
}

/** Polls until each exporter runs at `arrives` and is gone from `leaves`; returns the time from `t0`. */
async function moved(what: string, t0: number, name: string, arrives: SiteName[], leaves: SiteName[]): Promise<number> {
  const where = async () =>
    (await Promise.all([...arrives, ...leaves].map(async (n) => `${n}: ${await exporterStatus(sites[n], name)}`))).join(
      ', ',
    );
  await eventually(
    async () => {
      for (const n of arrives) if ((await exporterStatus(sites[n], name)) !== 'ready') return false;
      for (const n of leaves) if ((await exporterStatus(sites[n], name)) !== 404) return false;
      return true;
    },
    `${what}: ${name} runs at ${arrives.join(',') || '-'} and not at ${leaves.join(',') || '-'}`,
    { ...SITE_WAIT, timeoutMs: 10_000 },
  ).catch(async (err: unknown) => {
    throw new Error(`${String(err)}; now ${await where()}`);
  });
  const ms = Math.round(performance.now() - t0);
  say(`${what}: ${name} moved (running at [${arrives}], stopped at [${leaves}]) ${ms} ms after the commit`);
  return ms;
}

const hook = (name: string, placement: JsonObject, extra: JsonObject = {}): JsonObject => ({
  name,
  url: `http://127.0.0.1:\${SYS_SITE_LABELS[sink]}/\${SYS_SITE}/${name}`,
  topics: ['readings'],
  'site-placement': placement,
  data: '${MSG_PAYLOAD}',
  ...extra,
});

async function put(path: string, body: JsonObject): Promise<void> {
  const r = await admin.call('PUT', `/v1/config/${path}`, body);
  assert.ok(r.status === 201 || r.status === 204, `PUT ${path}: ${r.status} ${r.text}`);
}

async function patch(path: string, body: JsonObject): Promise<void> {
  const r = await admin.call('PATCH', `/v1/config/${path}`, body);
  assert.is(r.status, 204, `PATCH ${path}: ${r.text}`);
}

async function produce(s: Site, payload: string): Promise<void> {
  const r = await s.api.call('POST', '/v1/state/volga/topics/readings/produce', { payload });
  assert.is(r.status, 201, `produce at ${s.name}: ${r.text}`);
}

test.before(async () => {
  // uvu does not report an error thrown by a before hook: say it here (the file still fails).
  try {
    cpRedisUrl = await freshRedisDb(5);
    cpPort = await freePort();
    cpDir = tmp();
    await startCp();
    admin = client(cp.url, password);
    const labels: Record<SiteName, Record<string, string>> = {
      'edge-r': { region: 'eu', tier: 'gold' },
      'edge-a': { region: 'eu' },
      'edge-b': { region: 'us' },
    };
    for (const name of siteNames) {
      const sink = await startWebhookServer();
      const s: Site = {
        name,
        labels: { ...labels[name], sink: String(sink.port) },
        proxy: await startTcpProxy(cpPort),
        sink,
        dir: tmp(),
        ...(name === 'edge-r' ? { redis: await startRedis({ persist: true }) } : {}),
        token: '',
        api: admin,
        past: '',
        kills: 0,
      };
      sites[name] = s;
      await put(`sites/${name}`, { name, labels: s.labels });
      const t = await admin.call('POST', `/v1/state/sites/${name}/issue-token`);
      assert.is(t.status, 201, t.text);
      s.token = (t.body as { token: string }).token;
    }
  } catch (err) {
    say(`set-up failed: ${err instanceof Error ? err.stack : String(err)}`);
    throw err;
  }
});

test.after(async () => {
  for (const p of [...live]) await kill9(p);
  for (const s of Object.values(sites)) {
    await s.proxy.close();
    await s.sink.close();
    await s.redis?.dispose();
  }
});

test('every placement form puts exactly what applies on each site, and it delivers there', async () => {
  await put('applications/app-1', { name: 'app-1', version: '1' });
  await put('application-deployments/dep-1', {
    name: 'dep-1',
    'application-name': 'app-1',
    placement: { 'match-site-labels': 'tier = gold' },
  });
  await put('volga/webhooks/all', hook('all', { 'all-sites': true }));
  await put('volga/webhooks/eu', hook('eu', { 'match-site-labels': 'region = eu' }));
  await put('volga/webhooks/listed', hook('listed', { sites: ['edge-a', 'edge-b'] }));
  await put('volga/webhooks/dep', hook('dep', { 'application-deployments': ['dep-1'] }));
  await put('volga/webhooks/nowhere', hook('nowhere', { sites: ['edge-z'] }));
  const t0 = performance.now();
  await Promise.all(siteNames.map((n) => startSite(sites[n])));
  const started = Math.round(performance.now() - t0);
  for (const n of siteNames) await caughtUp(sites[n], 'first sync');
  say(`three site processes started in ${started} ms, synced ${Math.round(performance.now() - t0)} ms after the start`);
  const want: Record<SiteName, string[]> = {
    'edge-r': ['all', 'dep', 'eu'],
    'edge-a': ['all', 'eu', 'listed'],
    'edge-b': ['all', 'listed'],
  };
  for (const n of siteNames) {
    const s = sites[n];
    assert.equal(await namesAt(s.api, 'volga/webhooks'), want[n], `exporters at ${n}`);
    assert.equal(await namesAt(s.api, 'sites'), [n], `${n} holds its own site object only`);
  }
  assert.equal(await namesAt(sites['edge-r'].api, 'application-deployments'), ['dep-1']);
  assert.equal(await namesAt(sites['edge-r'].api, 'applications'), ['app-1']);
  assert.equal(await namesAt(sites['edge-a'].api, 'application-deployments'), []);
  // Each site's exporters deliver to its own sink, and only those.
  for (const n of siteNames) {
    const s = sites[n];
    await eventually(
      async () => (await Promise.all(want[n].map((w) => exporterStatus(s, w)))).every((st) => st === 'ready'),
      `exporters ready at ${n}`,
      SITE_WAIT,
    );
    await produce(s, `first-${n}`);
    const paths = want[n].map((w) => `/${n}/${w}`).sort();
    await s.sink.waitFor(
      (reqs) => paths.every((p) => reqs.some((r) => r.path === p && r.body === `first-${n}`)),
      `deliveries at ${n}`,
    );
    const got = [...new Set(s.sink.delivered().map((r) => r.path))].sort();
    assert.equal(got, paths, `${n}'s sink got exactly its exporters' deliveries`);
  }
});

test('a change of site labels, of a deployment or of a list of sites moves exporters between sites', async () => {
  const times: number[] = [];
  // Site labels: edge-b joins region eu, then edge-a leaves it.
  let t0 = performance.now();
  await patch('sites/edge-b', { labels: { region: 'eu' } });
  times.push(await moved('labels of edge-b', t0, 'eu', ['edge-b'], []));
  t0 = performance.now();
  await patch('sites/edge-a', { labels: { region: 'us' } });
  times.push(await moved('labels of edge-a', t0, 'eu', [], ['edge-a']));
  // A deployment: dep-1 now selects region us (edge-a) instead of tier gold (edge-r).
  t0 = performance.now();
  await patch('application-deployments/dep-1', { placement: { 'match-site-labels': 'region = us' } });
  times.push(await moved('deployment dep-1', t0, 'dep', ['edge-a'], ['edge-r']));
  // A list of sites: listed leaves edge-a and edge-b for edge-r.
  t0 = performance.now();
  // (a PUT: a plain patch merges lists of names, it would add edge-r to the list)
  await put('volga/webhooks/listed', hook('listed', { sites: ['edge-r'] }));
  times.push(await moved('site list of listed', t0, 'listed', ['edge-r'], ['edge-a', 'edge-b']));
  say(`placement moves: ${times.join(', ')} ms (commit → running at the new sites and stopped at the old)`);
  for (const n of siteNames) await caughtUp(sites[n], 'after the moves');
  assert.equal(await namesAt(sites['edge-a'].api, 'applications'), ['app-1'], 'the application follows dep-1');
  assert.equal(await namesAt(sites['edge-r'].api, 'applications'), []);
});

test('edge-a cut off for 30 s: 100 changes, it keeps delivering and restarts, the others stay in sync; then it catches up', async () => {
  const a = sites['edge-a'];
  const cutMs = 30_000;
  const before = await link('edge-a');
  await a.proxy.cut();
  const cutAt = performance.now();
  await eventually(
    async () => (await link('edge-a')).connection === 'disconnected',
    'edge-a seen disconnected',
    SITE_WAIT,
  );
  // 100 changes, most of them applying to edge-a (region us now): churn exporters on their own
  // topic, deletes, label changes of edge-a, a change of dep-1 (which runs at edge-a).
  for (let i = 0; i < 100; i++) {
    const n = `churn-${i % 20}`;
    if (i % 5 === 4) {
      const r = await admin.call('DELETE', `/v1/config/volga/webhooks/churn-${(i + 7) % 20}`);
      assert.ok(r.status === 204 || r.status === 404, `change ${i}: ${r.status} ${r.text}`);
    } else if (i % 7 === 0) await patch('sites/edge-a', { labels: { step: String(i) } });
    else if (i % 11 === 0) await patch('application-deployments/dep-1', { 'application-version': String(i) });
    else
      await put(
        `volga/webhooks/${n}`,
        hook(n, { 'match-site-labels': 'region = us' }, { topics: ['churn'], tries: i }),
      );
  }
  say(`100 changes made at the control plane in ${Math.round(performance.now() - cutAt)} ms while edge-a is cut off`);
  // The sites still connected apply them; edge-a is behind.
  await caughtUp(sites['edge-b'], 'edge-b while edge-a is cut off');
  await caughtUp(sites['edge-r'], 'edge-r while edge-a is cut off');
  assert.is((await link('edge-a'))['config-version'], before['config-version'], 'edge-a applied nothing while cut off');
  // edge-a keeps delivering on its last configuration, also across a restart (kill -9) while cut off.
  // At least three messages before the restart and three after, one a second, for 30 s in all.
  let produced = 0;
  const deliveredUpTo = (n: number, what: string) =>
    a.sink.waitFor(
      (reqs) =>
        Array.from({ length: n }, (_, k) => `cut-${k}`).every((p) =>
          reqs.some((r) => r.path === '/edge-a/all' && r.body === p),
        ),
      what,
    );
  const beforeRestart = async () => produced < 3 || performance.now() - cutAt < cutMs / 3;
  for (let round = 0; round < 60 && (await beforeRestart()); round++) {
    await produce(a, `cut-${produced++}`);
    await new Promise((r) => setTimeout(r, 1000));
  }
  await deliveredUpTo(produced, `the ${produced} messages produced at edge-a while cut off are delivered`);
  const beforeKill = produced;
  await killSite(a);
  await startSite(a);
  const kept = await a.api.call('GET', '/v1/config/volga/webhooks/all');
  assert.is(kept.status, 200, 'its last configuration is served after a restart while cut off');
  assert.equal(await namesAt(a.api, 'volga/webhooks'), ['all', 'dep'], 'the exporters it had before the cut');
  await eventually(
    async () => (await exporterStatus(a, 'all')) === 'ready' && (await exporterStatus(a, 'dep')) === 'ready',
    'exporters running again at edge-a while cut off',
    SITE_WAIT,
  );
  say(`edge-a restarted while cut off (${Math.round(performance.now() - cutAt)} ms into the cut)`);
  for (let round = 0; round < 60 && (produced - beforeKill < 3 || performance.now() - cutAt < cutMs); round++) {
    await produce(a, `cut-${produced++}`);
    await new Promise((r) => setTimeout(r, 1000));
  }
  await deliveredUpTo(produced, `the ${produced} messages produced at edge-a while cut off are delivered`);
  say(`edge-a delivered all ${produced} messages produced during the cut, before the proxy came back`);
  assert.ok(performance.now() - cutAt >= cutMs, 'cut off for 30 s');
  assert.is((await link('edge-a')).connection, 'disconnected', 'still cut off until now');
  await a.proxy.restore();
  const restoredAt = performance.now();
  const ms = await caughtUp(a, 'edge-a after the cut');
  say(`edge-a caught up ${ms} ms after the proxy came back (cut for ${Math.round(restoredAt - cutAt)} ms)`);
  for (const n of siteNames) await exactlyOnce(sites[n], 'after the cut');
});

test('a control-plane kill -9 and restart: every site reconnects and catches up exactly', async () => {
  await kill9(cp);
  await eventually(
    async () =>
      siteNames.every((n) =>
        sites[n]
          .proc!.output()
          .split('\n')
          .some((l) => l.includes('"fleet: sync with the control plane failed')),
      ),
    'every site noticed the control plane is gone',
    SITE_WAIT,
  ).catch(() => undefined); // a site between two keep-alives may notice only at reconnection
  await startCp();
  const restartedAt = performance.now();
  for (let i = 0; i < 5; i++) await patch('volga/webhooks/all', { tries: 100 + i });
  const times: string[] = [];
  for (const n of siteNames) times.push(`${n} ${await caughtUp(sites[n], 'after the control-plane restart')} ms`);
  say(
    `control plane restarted: caught up ${times.join(', ')} (from ${Math.round(performance.now() - restartedAt)} ms total)`,
  );
  for (const n of siteNames) {
    const r = await sites[n].api.call('GET', '/v1/config/volga/webhooks/all');
    assert.is((r.body as { tries?: number }).tries, 104, `${n} has the last change`);
    await exactlyOnce(sites[n], 'after the control-plane restart');
  }
});

// On each store: edge-b on the embedded one, edge-r on a redis-server of its own.
for (const name of ['edge-b', 'edge-r'] as const)
  test(`${name} killed (-9) in the middle of a burst of changes: restarted, it catches up exactly`, async () => {
    const b = sites[name];
    const burstName = (i: number) => `burst-${name}-${i % 10}`;
    const burst = (async () => {
      for (let i = 0; i < 40; i++)
        await put(
          `volga/webhooks/${burstName(i)}`,
          hook(burstName(i), { sites: [name] }, { topics: ['burst'], tries: i }),
        );
    })();
    await eventually(
      async () => (await namesAt(b.api, 'volga/webhooks')).includes(burstName(0)),
      `the burst reaches ${name}`,
      SITE_WAIT,
    );
    await killSite(b);
    await burst;
    // Five more after the kill, so the restarted process surely has changes to apply even when
    // the kill came late in the burst (on a loaded machine the burst may outrun it).
    for (let i = 40; i < 45; i++)
      await put(
        `volga/webhooks/${burstName(i)}`,
        hook(burstName(i), { sites: [name] }, { topics: ['burst'], tries: i }),
      );
    await startSite(b);
    const ms = await caughtUp(b, `${name} after a kill -9 mid-burst`);
    assert.ok(
      b.proc!.output().includes('"fleet: applied change"'),
      'killed mid-burst: the restarted process applied the rest of the burst',
    );
    say(`${name} killed mid-burst, restarted, caught up in ${ms} ms`);
    for (let i = 0; i < 10; i++) {
      const r = await b.api.call('GET', `/v1/config/volga/webhooks/${burstName(i)}`);
      assert.is((r.body as { tries?: number }).tries, i < 5 ? 40 + i : 30 + i, `${burstName(i)} has its last change`);
    }
    for (const n of siteNames) await exactlyOnce(sites[n], 'at the end');
  });

test.run();
