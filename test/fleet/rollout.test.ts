/**
 * Staged rollouts (CONTRACT §11) in processes on loopback: a control plane on Redis and four
 * edge sites (embedded stores, exporters running), one webhook exporter placed on all four
 * with `rollout: {waves: [ring = canary, 50%], ...}`: wave 1 is edge-1, wave 2 edge-2, the
 * last edge-3 and edge-4.
 *
 *   - a good change walks every wave; while wave 1 runs, the later sites keep the previous URL
 *   - a change whose webhook fails at edge-1 stops there (paused); the other sites never get it;
 *     abort gives edge-1 the previous content back (`edgeplane ctl rollout` reads the paused
 *     rollout and aborts it, as an operator would)
 *   - with `on-failure: rollback` the same happens by itself
 *   - the control plane killed (kill -9) mid-rollout and started again carries on from the
 *     wave it was at (the rollout's record is in Redis)
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFile } from 'node:child_process';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { spawnApiProc, type ApiProc } from '../helpers/api-proc.js';
import { freshRedisDb } from '../helpers/redis.js';
import { client, SITE_WAIT, type Client } from '../helpers/fleet.js';
import { tempDir } from '../helpers/backends.js';
import { eventually } from '../helpers/wait.js';
import { startWebhookServer, type WebhookServer } from '../helpers/webhook-server.js';

const password = 'rollout-password';
const names = ['edge-1', 'edge-2', 'edge-3', 'edge-4'];
const path = '/v1/config/volga/webhooks/hook';
const state = '/v1/state/volga/webhooks/hook';
const wait = { ...SITE_WAIT, timeoutMs: 60_000 };

type Rollout = { wave: number; state: string; reason: string; 'sites-updated': number; 'sites-total': number };

let redisUrl: string;
let cpDir: string;
let cp: ApiProc;
let admin: Client;
const sites: ApiProc[] = [];
const siteAdmins: Client[] = [];
let sink: WebhookServer;

const startCp = (port: number) =>
  spawnApiProc({ REDIS_URL: redisUrl, SITE: 'hq', ADMIN_PASSWORD: password, DATA_DIR: cpDir, PORT: String(port) });

test.before(async () => {
  redisUrl = await freshRedisDb(7);
  cpDir = tempDir('edgeplane-rollout-');
  cp = await startCp(0);
  admin = client(cp.url, password);
  sink = await startWebhookServer();
  sink.script((_n, req) => (req.path.startsWith('/bad') ? { status: 500, body: 'down' } : { status: 200 }));
  for (const name of names) {
    const labels = { region: 'eu', ring: name === 'edge-1' ? 'canary' : 'main' };
    const r = await admin.call('PUT', `/v1/config/sites/${name}`, { name, labels });
    assert.is(r.status, 201, r.text);
    const token = ((await admin.call('POST', `/v1/state/sites/${name}/issue-token`)).body as { token: string }).token;
    const site = await spawnApiProc({
      CONTROL_PLANE_URL: cp.url,
      SITE: name,
      SITE_TOKEN: token,
      DATA_DIR: tempDir('edgeplane-rollout-site-'),
      FLEET_REPORT_INTERVAL: '100ms',
      API_PROC_RUNTIME: '1',
    });
    sites.push(site);
    siteAdmins.push(client(site.url, password));
  }
});

test.after(async () => {
  for (const p of [...sites, cp]) await p?.stop();
  await sink?.close();
});

const hook = (url: string, rollout: Record<string, unknown> = {}) => ({
  name: 'hook',
  url: `${sink.url}${url}/\${SYS_SITE}`,
  topics: ['readings'],
  'site-placement': { 'match-site-labels': 'region = eu' },
  data: '${MSG_PAYLOAD}',
  'retry-interval': '100ms',
  'max-retry-interval': '200ms',
  rollout: {
    waves: [{ 'match-site-labels': 'ring = canary' }, { percent: 50 }],
    'healthy-for': '1s',
    ...rollout,
  },
});

/** The URL (path part) each site runs, undefined where it has no exporter. */
async function urlAt(i: number): Promise<string | undefined> {
  const r = await siteAdmins[i]!.call('GET', path);
  if (r.status === 404) return undefined;
  assert.is(r.status, 200, r.text);
  return new URL((r.body as { url: string }).url.replace('${SYS_SITE}', 'x')).pathname.replace(/\/x$/, '');
}
const urls = async () => Promise.all(names.map((_, i) => urlAt(i)));

async function rollout(): Promise<Rollout | undefined> {
  const r = await admin.call('GET', state);
  if (r.status !== 200) return undefined;
  return (r.body as { rollout?: Rollout }).rollout;
}

/** Waits until the rollout is in `want` (while `each` runs at every look), and returns it. */
async function until(want: string, each: () => Promise<void> = async () => {}): Promise<Rollout> {
  let last: Rollout | undefined;
  await eventually(
    async () => {
      await each();
      last = await rollout();
      return last?.state === want;
    },
    () => `the rollout is ${want}: ${JSON.stringify(last)}`,
    wait,
  );
  return last!;
}

const worker = resolve(import.meta.dirname, '../../worker.ts');
let ctlEnv: NodeJS.ProcessEnv;

/** `edgeplane ctl ARGS` at the control plane (worker.ts under tsx), logged in as admin. */
async function ctl(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  ctlEnv ??= {
    ...process.env,
    EDGEPLANE_URL: cp.url,
    EDGEPLANE_CREDENTIALS: join(tempDir('edgeplane-rollout-ctl-'), 'credentials'),
    EDGEPLANE_PASSWORD: password,
  };
  const run = promisify(execFile);
  try {
    const r = await run(process.execPath, ['--import', 'tsx', worker, 'ctl', ...args], { env: ctlEnv });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    const f = e as { code?: number; stdout?: string; stderr?: string };
    return { code: f.code ?? -1, stdout: f.stdout ?? '', stderr: f.stderr ?? '' };
  }
}

/** Produces one message at edge-1 (what makes a failing webhook show it). */
const produceAtEdge1 = async () => {
  const r = await siteAdmins[0]!.call('POST', '/v1/state/volga/topics/readings/produce', { payload: 'm' });
  assert.is(r.status, 201, r.text);
};

test('a new exporter and then a good change walk every wave; later waves keep the previous content meanwhile', async () => {
  assert.is((await admin.call('PUT', path, hook('/v1'))).status, 201);
  const first = await until('done');
  assert.equal([first['sites-updated'], first['sites-total'], first.wave], [4, 4, 3]);
  await eventually(async () => (await urls()).every((u) => u === '/v1'), 'every site runs v1', wait);

  assert.is((await admin.call('PUT', path, hook('/v2'))).status, 204);
  const seen: number[] = [];
  await until('done', async () => {
    // Read edge-4 first: if the rollout is still at wave 1 afterwards, edge-4 had not got it then.
    const at4 = await urlAt(3);
    const r = await rollout();
    if (r?.state !== 'progressing') return;
    if (seen.at(-1) !== r.wave) seen.push(r.wave);
    if (r.wave < 3) assert.is(at4, '/v1', `edge-4 keeps v1 while the rollout is at wave ${r.wave}`);
  });
  assert.equal(
    seen.filter((w, i) => i === 0 || w > seen[i - 1]!),
    seen,
    `the waves go one way: ${seen.join(' ')}`,
  );
  assert.ok(seen.includes(1), `wave 1 was seen: ${seen.join(' ')}`);
  await eventually(async () => (await urls()).every((u) => u === '/v2'), 'every site runs v2', wait);
});

test('a change failing at wave 1 pauses there; the other sites never get it; abort restores edge-1', async () => {
  assert.is((await admin.call('PUT', path, hook('/bad', { 'healthy-for': '60s' }))).status, 204);
  const paused = await until('paused', produceAtEdge1);
  assert.is(paused.wave, 1);
  assert.match(paused.reason, /^site edge-1 reports exporter hook (retrying|error)/);
  assert.equal((await urls()).slice(1), ['/v2', '/v2', '/v2'], 'edge-2..4 keep v2');
  assert.is(await urlAt(0), '/bad');
  assert.ok(!sink.requests.some((r) => r.path.startsWith('/bad/edge-') && r.path !== '/bad/edge-1'));
  assert.ok(
    sink.requests.some((r) => r.path === '/bad/edge-1'),
    'edge-1 ran the bad change',
  );

  // As an operator does it: ctl rollout shows the paused rollout, ctl rollout abort rolls it back.
  assert.is((await ctl('login', '-u', 'admin')).code, 0);
  const shown = await ctl('rollout', 'volga/webhooks/hook');
  assert.is(shown.code, 0, shown.stderr);
  const progress = parse(shown.stdout) as Rollout & { waves: unknown[] };
  assert.equal([progress.state, progress.wave, progress.waves.length], ['paused', 1, 2]);
  assert.match(progress.reason, /^site edge-1 reports exporter hook/);
  const bad = await ctl('rollout', 'restart', 'volga/webhooks/hook');
  assert.is(bad.code, 2);
  assert.match(bad.stderr, /"restart" is not one of resume, abort/);
  const abort = await ctl('rollout', 'abort', 'volga/webhooks/hook');
  assert.is(abort.code, 0, abort.stderr);
  assert.match(abort.stderr, /rollout of volga\/webhooks\/hook aborted: every site gets the previous content back/);
  const back = await rollout();
  assert.is(back?.state, 'rolled-back');
  assert.is(back?.reason, 'aborted by admin');
  await eventually(async () => (await urls()).every((u) => u === '/v2'), 'edge-1 runs v2 again', wait);
  assert.is((await admin.call('POST', `${state}/rollout/resume`)).status, 409);
  const resume = await ctl('rollout', 'resume', 'state/volga/webhooks/hook');
  assert.is(resume.code, 1, 'a rolled-back rollout cannot be resumed');
  assert.match(resume.stderr, /rollout resume state\/volga\/webhooks\/hook/);
  assert.ok(!sink.requests.some((r) => r.path.startsWith('/bad/edge-') && r.path !== '/bad/edge-1'));
});

test('on-failure: rollback restores the previous content at wave 1 by itself', async () => {
  const bad = hook('/bad2', { 'healthy-for': '60s', 'on-failure': 'rollback' });
  assert.is((await admin.call('PUT', path, bad)).status, 204);
  const back = await until('rolled-back', produceAtEdge1);
  assert.is(back.wave, 1);
  assert.match(back.reason, /^site edge-1 reports exporter hook (retrying|error)/);
  await eventually(async () => (await urls()).every((u) => u === '/v2'), 'edge-1 runs v2 again', wait);
  assert.ok(
    sink.requests.some((r) => r.path === '/bad2/edge-1'),
    'edge-1 ran the bad change',
  );
  assert.ok(!sink.requests.some((r) => r.path.startsWith('/bad2/edge-') && r.path !== '/bad2/edge-1'));
});

test('the control plane killed (kill -9) mid-rollout carries on from the wave it was at', async () => {
  assert.is((await admin.call('PUT', path, hook('/v3', { wait: '2s' }))).status, 204);
  let at: Rollout | undefined;
  await eventually(
    async () => {
      at = await rollout();
      return at?.state === 'progressing' && at.wave >= 2;
    },
    () => `the rollout reaches wave 2: ${JSON.stringify(at)}`,
    wait,
  );
  const port = cp.port;
  await new Promise<void>((done) => {
    cp.child.once('exit', () => done());
    cp.child.kill('SIGKILL');
  });
  assert.is(await urlAt(3), '/v2', 'edge-4 (last wave) has not got v3 yet');
  cp = await startCp(port);
  const after = await eventually(async () => rollout(), 'the restarted control plane answers', wait);
  assert.ok(after.wave >= 2, `it carries on from wave ${after.wave}, not from wave 1`);
  const done = await until('done');
  assert.equal([done['sites-updated'], done['sites-total']], [4, 4]);
  await eventually(async () => (await urls()).every((u) => u === '/v3'), 'every site runs v3', wait);
});

test('an object deleted mid-rollout and made again: the sites not yet reached never get the deleted content back', async () => {
  assert.is((await admin.call('PUT', path, hook('/v4', { 'healthy-for': '30s' }))).status, 204);
  await eventually(async () => (await urlAt(0)) === '/v4', 'edge-1 (wave 1) runs v4', wait);
  assert.is((await admin.call('DELETE', path)).status, 204);
  await eventually(async () => (await urls()).every((u) => u === undefined), 'no site runs the hook', wait);
  assert.is((await admin.call('PUT', path, hook('/v5'))).status, 201);
  // Until the rollout of the new object is done, a site has v5 or nothing: never v3 or v4.
  const seen = new Set<string>();
  await eventually(
    async () => {
      for (const u of await urls()) seen.add(String(u));
      return (await rollout())?.state === 'done';
    },
    'the new object rolled out',
    wait,
  );
  await eventually(async () => (await urls()).every((u) => u === '/v5'), 'every site runs v5', wait);
  assert.equal(
    [...seen].filter((u) => u !== '/v5' && u !== 'undefined'),
    [],
    'no old content',
  );
});

test('a site that leaves the placement while its wave waits for it (down, then relabelled away) no longer holds the rollout', async () => {
  await sites[3]!.stop();
  assert.is((await admin.call('PUT', path, hook('/v6'))).status, 204);
  let r: Rollout | undefined;
  await eventually(
    async () => {
      r = await rollout();
      return r?.state === 'progressing' && /edge-4/.test(r.reason);
    },
    () => `the last wave waits for edge-4: ${JSON.stringify(r)}`,
    wait,
  );
  const moved = await admin.call('PUT', '/v1/config/sites/edge-4', {
    name: 'edge-4',
    labels: { region: 'us', ring: 'main' },
  });
  assert.is(moved.status, 204, moved.text);
  const done = await until('done');
  assert.equal([done['sites-updated'], done['sites-total']], [3, 3]);
  await eventually(
    async () => (await Promise.all([0, 1, 2].map(urlAt))).every((u) => u === '/v6'),
    'v6 at edge-1..3',
    wait,
  );
});

test.run();
