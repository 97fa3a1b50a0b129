/**
 * `npm run bench:failover`: CONTRACT §10 failover figures, one table per Redis deployment with
 * replicas (BENCH_FAILOVER_DEPLOYMENTS, default `sentinel`: a primary, a replica and three
 * sentinels). For each deployment three scenarios, each on a fresh deployment, each with the
 * primary killed with kill -9 while it runs:
 *   (a) configuration churn: exporter PUTs one after another at the control plane; every write
 *       answered 2xx is present afterwards;
 *   (b) exporter delivery at ~1,000 msg/s: a producer process writes the topic (each batch
 *       confirmed as a produce answered 2xx is: WAIT 1 while the primary has a replica), the
 *       exporter POSTs to a sink process; nothing confirmed is lost, duplicates counted against
 *       the README's bound (what was in flight plus a second of acknowledgements not yet
 *       replicated);
 *   (c) 100 connected sites (simulated by the fleet bench's site process: the real sync loop)
 *       while exporters placed on all sites are written: every site ends with exactly the
 *       control plane's set, each change applied once and in order.
 * The resume time is measured from the promotion (the sentinels name the replica and it answers
 * as primary) to the first 2xx write (a), the first delivery (b), every site holding a write
 * made after the promotion (c); goal ≤ 10 s.
 *
 * The product is the built bundle (`build/edgeplane.cjs`) in its own process; the producer, the
 * sink and the sites run in processes of their own (this file run with --producer / --sink;
 * bench-fleet.ts --sites), and each one's CPU over the scenario is printed, beside what the
 * producer and the sink do alone (unpaced, on a standalone redis-server / from this process), to
 * show that they are not the limit. BENCH_BUILD=0 reuses build/. Every loop is bounded.
 */
import { fork, spawnSync, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:http';
import { existsSync, mkdtempSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { redisClient, replicaConfirmation, send, type RedisTarget } from '../src/lib/redis.js';
import { compareVersions } from '../src/fleet/common/protocol.js';
import { startRedis } from '../test/helpers/redis.js';
import {
  digest,
  exporterBody,
  now,
  percentile,
  siteBody,
  siteName,
  sleep,
  type SiteAudit,
} from './fleet-bench/common.js';
import {
  Api,
  Bench,
  forkSites,
  loadAverage,
  logReader,
  newControlPlane,
  procStat,
  startDeployment,
  type Cp,
  type Deployment,
} from './fleet-bench/harness.js';

const GOAL_RESUME_S = 10;
const RATE = Number(process.env.BENCH_FAILOVER_RATE ?? 1000);
const DELIVERY_SECONDS = Number(process.env.BENCH_FAILOVER_SECONDS ?? 10);
const SITES = Number(process.env.BENCH_FAILOVER_SITES ?? 100);
const MAX_IN_FLIGHT = 8;

type Row = [what: string, figure: string, note: string];
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const met = (ok: boolean) => (ok ? 'met' : 'NOT met');

// ---- the producer and the sink: processes of their own ---------------------------------------

type ProducerDone = { confirmed: number[]; attempted: number; cpuMs: number; killSeq: number };

/** Writes `seq-<n>-t-<ms>` to volga:flow at RATE a second (batches, each confirmed as a produce is) until told to stop. */
async function producerProcess(): Promise<void> {
  const target = JSON.parse(process.env.BENCH_TARGET!) as RedisTarget;
  const c = redisClient(target, 'bench-producer');
  await c.connect();
  const confirm = replicaConfirmation(c, target);
  let stop = false;
  let unpaced = false;
  let killSeq = -1;
  let seq = 0;
  let go!: () => void;
  const started = new Promise<void>((r) => (go = r));
  process.on('message', (m: { type: string }) => {
    if (m.type === 'stop') stop = true;
    // A message before the paced run: the exporter's group exists and delivers (only then is
    // every message of the run one it must deliver).
    if (m.type === 'warm') void send(c, ['XADD', 'volga:flow', '*', 'payload', 'warm-up'], 'volga:flow');
    if (m.type === 'go' || m.type === 'unpaced') go();
    if (m.type === 'mark') killSeq = seq;
    if (m.type === 'unpaced') unpaced = true;
  });
  process.send!({ ready: true });
  await started;
  const confirmed: number[] = [];
  const t0 = now();
  for (let i = 0; !stop && i < 1_000_000; i++) {
    const due = unpaced ? 500 : Math.min(500, Math.floor(((now() - t0) * RATE) / 1000) - seq);
    if (due <= 0) {
      await sleep(5);
      continue;
    }
    const batch = Array.from({ length: due }, () => seq++);
    try {
      const t = String(Math.round(now()));
      await Promise.all(
        batch.map((n) => send(c, ['XADD', 'volga:flow', '*', 'payload', `seq-${n}-t-${t}`], 'volga:flow')),
      );
      // Confirmed as the product confirms a produce answered 2xx: WAIT 1 while the primary has a
      // replica (a promoted replica left without one does not wait; standalone has none).
      await confirm('volga:flow');
      confirmed.push(...batch);
    } catch {
      await sleep(50); // not confirmed: the failover
    }
  }
  const cpu = process.cpuUsage();
  const done: ProducerDone = { confirmed, attempted: seq, cpuMs: (cpu.user + cpu.system) / 1000, killSeq };
  process.send!(done, () => process.exit(0));
}

type SinkStats = { counts: Array<[number, number]>; firstAfter: number | undefined; posts: number };

/** An HTTP sink: 204 to every POST, counting each `seq-<n>` and the time of each arrival. */
async function sinkProcess(): Promise<void> {
  const counts = new Map<number, number>();
  const arrivals: number[] = [];
  let posts = 0;
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      posts++;
      const m = /seq-(\d+)/.exec(body);
      if (m) {
        counts.set(Number(m[1]), (counts.get(Number(m[1])) ?? 0) + 1);
        arrivals.push(now());
      }
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  process.on('message', (m: { type: string; after?: number }) => {
    if (m.type !== 'stats') return;
    const stats: SinkStats = {
      counts: [...counts],
      firstAfter: m.after === undefined ? undefined : arrivals.find((t) => t >= m.after!),
      posts,
    };
    process.send!(stats);
  });
  process.send!({ port: (server.address() as AddressInfo).port });
}

function forkSelf(flag: string, env: Record<string, string> = {}): Promise<{ proc: ChildProcess; first: unknown }> {
  const proc = fork(new URL(import.meta.url).pathname, [flag], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, ...env },
  });
  return new Promise((resolve, reject) => {
    proc.once('message', (first) => resolve({ proc, first }));
    proc.once('exit', (code) => reject(new Error(`${flag} process exited (${code})`)));
  });
}

const nextMessage = <T>(proc: ChildProcess, msg?: object): Promise<T> =>
  new Promise((resolve) => {
    proc.once('message', (m) => resolve(m as T));
    if (msg) proc.send(msg);
  });

/** Each helper alone: the producer unpaced on a standalone redis-server, the sink under 32 concurrent POSTs. */
async function helpersAlone(): Promise<Row[]> {
  const redis = await startRedis();
  const producer = await forkSelf('--producer', {
    BENCH_TARGET: JSON.stringify({ kind: 'standalone', url: redis.url }),
  });
  producer.proc.send({ type: 'unpaced' });
  const t0 = now();
  await sleep(2000);
  const p = await nextMessage<ProducerDone>(producer.proc, { type: 'stop' });
  const pRate = p.attempted / ((now() - t0) / 1000);
  await redis.stop();
  const sink = await forkSelf('--sink');
  const url = `http://127.0.0.1:${(sink.first as { port: number }).port}/hook`;
  const agent = new Agent({ connections: 32 });
  let sent = 0;
  const t1 = now();
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (now() - t1 < 2000) {
        const r = await request(url, { method: 'POST', body: `{"payload":"seq-${sent++}"}`, dispatcher: agent });
        await r.body.dump();
      }
    }),
  );
  const sRate = sent / ((now() - t1) / 1000);
  await agent.close();
  sink.proc.kill();
  return [
    [
      'producer alone (unpaced, standalone redis-server)',
      `${Math.round(pRate)} msg/s`,
      `${(pRate / RATE).toFixed(1)} × the ${RATE} msg/s the scenario asks of it`,
    ],
    [
      'sink alone (32 concurrent POSTs from the bench)',
      `${Math.round(sRate)} POST/s`,
      `${(sRate / RATE).toFixed(1)} × ${RATE}/s`,
    ],
  ];
}

// ---- the scenarios ------------------------------------------------------------------------------

async function productOn(d: Deployment): Promise<{ cp: Cp; api: Api }> {
  const cp = await newControlPlane(d.env, mkdtempSync(join(tmpdir(), 'edgeplane-bench-failover-')), 1);
  const api = new Api(cp.url);
  await api.login();
  return { cp, api };
}

/** Status of one PUT (0: no answer in 20 s). */
async function put(api: Api, path: string, body: unknown): Promise<number> {
  try {
    await api.call('PUT', path, body);
    return 200;
  } catch (err) {
    const m = /: (\d{3}) /.exec(err instanceof Error ? err.message : '');
    return m ? Number(m[1]) : 0;
  }
}

/** The primary killed at `atMs` from now; resolves with the kill and promotion times. */
function failoverAt(
  d: Deployment,
  key: string,
  atMs: number,
  onKill?: () => void,
): Promise<{ killedAt: number; promotedAt: number }> {
  return (async () => {
    await sleep(atMs);
    const old = await d.failover!.killPrimary(key);
    const killedAt = now();
    onKill?.();
    await d.failover!.waitPromoted(key, old, 60_000);
    return { killedAt, promotedAt: now() };
  })();
}

/** (a) exporter PUTs one after another; the primary killed after 3 s. */
async function configChurn(kind: string): Promise<Row[]> {
  const d = await startDeployment(kind);
  const { cp, api } = await productOn(d);
  try {
    const acked: string[] = [];
    const refused = new Map<number, number>();
    let times: { killedAt: number; promotedAt: number } | undefined;
    const failover = failoverAt(d, '{ep}', 3000).then((t) => (times = t));
    let resumedAt = 0;
    const latencies: number[] = [];
    const t0 = now();
    const cpu0 = procStat(cp.child.pid!).cpuMs;
    for (let i = 0; i < 100_000 && now() - t0 < 120_000; i++) {
      const t = now();
      const status = await put(
        api,
        `/v1/config/volga/webhooks/w-${i}`,
        exporterBody({ name: `w-${i}`, selector: 'system/name=elsewhere', marker: 'w0' }),
      );
      if (status >= 200 && status < 300) {
        acked.push(`w-${i}`);
        latencies.push(now() - t);
        if (times && !resumedAt) resumedAt = now();
      } else refused.set(status, (refused.get(status) ?? 0) + 1);
      if (resumedAt && now() - resumedAt > 2000) break;
    }
    const window = now() - t0;
    const cpu = procStat(cp.child.pid!).cpuMs - cpu0;
    await failover;
    const list = (await api.call('GET', '/v1/config/volga/webhooks')) as Array<{ name: string }>;
    const present = new Set(list.map((w) => w.name));
    const missing = acked.filter((n) => !present.has(n)).length;
    const resume = resumedAt - times!.promotedAt;
    return [
      [
        '(a) config churn: every 2xx write present afterwards',
        missing === 0 ? 'yes' : `NO: ${missing} missing`,
        `${acked.length} writes answered 2xx, refused ${JSON.stringify(Object.fromEntries(refused))}; PUT p50 ${percentile(latencies, 50).toFixed(1)} ms, p99 ${percentile(latencies, 99).toFixed(1)} ms`,
      ],
      [
        '(a) kill -9 → promotion',
        seconds(times!.promotedAt - times!.killedAt),
        'down-after / node timeout 1 s, then the election',
      ],
      [
        '(a) promotion → first 2xx write',
        seconds(resume),
        `goal ≤ ${GOAL_RESUME_S} s: ${met(resume <= GOAL_RESUME_S * 1000)}; product CPU ${((cpu / window) * 100).toFixed(0)} % of a core over ${seconds(window)}; load ${loadAverage()}`,
      ],
    ];
  } finally {
    cp.child.kill('SIGKILL');
    await d.stop();
  }
}

/** (b) the exporter delivers what a producer writes at RATE msg/s; the primary killed after 3 s. */
async function delivery(kind: string): Promise<Row[]> {
  const d = await startDeployment(kind);
  const { cp, api } = await productOn(d);
  const sink = await forkSelf('--sink');
  const sinkUrl = `http://127.0.0.1:${(sink.first as { port: number }).port}`;
  const nodes = (list: string) => list.split(',').map((hp) => ({ host: '127.0.0.1', port: Number(hp.split(':')[1]) }));
  const target: RedisTarget = d.env.REDIS_SENTINELS
    ? { kind: 'sentinel', sentinels: nodes(d.env.REDIS_SENTINELS), master: d.env.REDIS_SENTINEL_MASTER! }
    : d.env.REDIS_CLUSTER
      ? { kind: 'cluster', nodes: nodes(d.env.REDIS_CLUSTER) }
      : { kind: 'standalone', url: d.env.REDIS_URL! };
  const producer = await forkSelf('--producer', { BENCH_TARGET: JSON.stringify(target) });
  try {
    await api.call('PUT', '/v1/config/volga/webhooks/flow', {
      topics: ['flow'],
      'site-placement': { 'all-sites': true },
      url: `${sinkUrl}/hook`,
      data: '${MSG}',
      'max-in-flight': MAX_IN_FLIGHT,
    });
    let warm = await nextMessage<SinkStats>(sink.proc, { type: 'stats' });
    for (let i = 0; i < 60 && warm.posts === 0; i++) {
      if (i % 10 === 0) producer.proc.send({ type: 'warm' });
      await sleep(200);
      warm = await nextMessage<SinkStats>(sink.proc, { type: 'stats' });
    }
    if (warm.posts === 0) throw new Error('the exporter delivered nothing before the run');
    producer.proc.send({ type: 'go' });
    const pcpu0 = procStat(cp.child.pid!).cpuMs;
    const t0 = now();
    let times: { killedAt: number; promotedAt: number } | undefined;
    const failover = failoverAt(d, 'volga:flow', 3000, () => producer.proc.send({ type: 'mark' })).then(
      (t) => (times = t),
    );
    await sleep(DELIVERY_SECONDS * 1000);
    const done = await nextMessage<ProducerDone>(producer.proc, { type: 'stop' });
    const window = now() - t0;
    await failover;
    const cpus = { product: procStat(cp.child.pid!).cpuMs - pcpu0, sink: procStat(sink.proc.pid!).cpuMs };
    let stats = await nextMessage<SinkStats>(sink.proc, { type: 'stats', after: times!.promotedAt });
    const want = new Set(done.confirmed);
    const delivered = (s: SinkStats) => s.counts.filter(([n]) => want.has(n)).length;
    for (let i = 0; i < 600 && delivered(stats) < want.size; i++) {
      await sleep(200);
      stats = await nextMessage<SinkStats>(sink.proc, { type: 'stats', after: times!.promotedAt });
    }
    const lost = want.size - delivered(stats);
    if (lost > 0) {
      const got = new Set(stats.counts.map(([n]) => n));
      const missing = done.confirmed.filter((n) => !got.has(n));
      process.stdout.write(
        `  (b) confirmed but not delivered: ${missing.slice(0, 20).join(', ')}${missing.length > 20 ? ', ...' : ''} (seq ${done.killSeq} was produced at the kill)\n`,
      );
    }
    const duplicates = stats.counts.reduce((s, [, c]) => s + c - 1, 0);
    const bound = RATE + MAX_IN_FLIGHT;
    const resume = (stats.firstAfter ?? Infinity) - times!.promotedAt;
    const rate = done.confirmed.length / (window / 1000);
    return [
      [
        '(b) delivery: nothing confirmed lost',
        lost === 0 ? 'yes' : `NO: ${lost} lost`,
        `${done.confirmed.length} of ${done.attempted} produced confirmed by the replica in ${seconds(window)} (${Math.round(rate)}/s, the failover included)${lost ? '' : ', all delivered'}`,
      ],
      [
        '(b) duplicates',
        String(duplicates),
        `README bound: in flight + a second of acknowledgements not yet replicated = ${bound}: ${met(duplicates <= bound)}`,
      ],
      ['(b) kill -9 → promotion', seconds(times!.promotedAt - times!.killedAt), ''],
      [
        '(b) promotion → first delivery',
        seconds(resume),
        `goal ≤ ${GOAL_RESUME_S} s: ${met(resume <= GOAL_RESUME_S * 1000)}; CPU over the run: product ${((cpus.product / window) * 100).toFixed(0)} %, producer ${((done.cpuMs / window) * 100).toFixed(0)} %, sink ${((cpus.sink / window) * 100).toFixed(0)} % of a core; load ${loadAverage()}`,
      ],
    ];
  } finally {
    producer.proc.kill();
    sink.proc.kill();
    cp.child.kill('SIGKILL');
    await d.stop();
  }
}

/** Polls the sites until each holds every name in `names` (bounded); returns when, or 0. */
async function sitesHold(b: Bench, names: string[], timeoutMs: number): Promise<number> {
  const deadline = now() + timeoutMs;
  while (now() < deadline) {
    const audits = (await Promise.all(b.children.map((c) => c.ask<{ audit: SiteAudit[] }>({ type: 'audit' })))).flatMap(
      (a) => a.audit,
    );
    const all =
      audits.length === SITES &&
      audits.every((a) => names.every((n) => a.held.some(([k]) => k.endsWith(`/webhooks/${n}`))));
    if (all) return now();
    await sleep(100);
  }
  return 0;
}

/** Each site applied its log after its snapshot once and in order, and holds the control plane's set. */
async function auditSites(b: Bench, d: Deployment): Promise<{ gaps: number; repeated: number; differ: number }> {
  const rc = await logReader(d);
  const audits = (await Promise.all(b.children.map((c) => c.ask<{ audit: SiteAudit[] }>({ type: 'audit' })))).flatMap(
    (a) => a.audit,
  );
  let gaps = 0;
  let repeated = 0;
  let differ = 0;
  for (const a of audits) {
    const vs = a.events.map(([, v]) => v);
    for (let i = 1; i < vs.length; i++) if (compareVersions(vs[i]!, vs[i - 1]!) <= 0) repeated++;
    const from = a.events.map(([k]) => k).lastIndexOf('snapshot');
    const snapshotAt = a.events[from]![1];
    const log = (await rc.log(a.site)).filter((id) => compareVersions(id, snapshotAt) > 0);
    if (
      log.join() !==
      a.events
        .slice(from + 1)
        .map(([, v]) => v)
        .join()
    )
      gaps++;
    const set = await rc.set(a.site);
    if (digest(Object.entries(set).map(([k, v]) => [k, JSON.parse(v) as unknown])) !== a.digest) differ++;
  }
  await rc.close();
  return { gaps, repeated, differ };
}

/** (c) SITES connected sites while exporters placed on all of them are written; the primary killed mid-way. */
async function connectedSites(kind: string): Promise<Row[]> {
  const d = await startDeployment(kind);
  const { cp, api } = await productOn(d);
  const b = new Bench(d, [cp], api);
  try {
    b.children.push(await forkSites(0, new URL('./bench-fleet.ts', import.meta.url).pathname));
    const names = Array.from({ length: SITES }, (_, i) => siteName(i));
    const model = { region: 0, group: 0, marker: 'w0' };
    await api.call(
      'PATCH',
      '/v1/config',
      names.map((n) => ({ 'x-path': `/v1/config/sites/${n}`, ...siteBody(n, model) })),
    );
    const tokens = new Map<string, string>();
    for (const n of names)
      tokens.set(n, ((await api.call('POST', `/v1/state/sites/${n}/issue-token`)) as { token: string }).token);
    await b.connect(tokens);
    for (let i = 0; i < 300 && (await b.status()).synced < SITES; i++) await sleep(100);
    const acked: string[] = [];
    let times: { killedAt: number; promotedAt: number } | undefined;
    let failover: Promise<unknown> | undefined;
    let after = '';
    const spcpu0 = procStat(b.children[0]!.proc.pid!).cpuMs;
    const t0 = now();
    for (let i = 0; i < 2000 && now() - t0 < 120_000; i++) {
      if (i === 20) failover = failoverAt(d, '{ep}', 0).then((t) => (times = t));
      const name = `f-${i}`;
      const status = await put(
        api,
        `/v1/config/volga/webhooks/${name}`,
        exporterBody({ name, selector: 'all', marker: `w${i + 1}` }),
      );
      if (status >= 200 && status < 300) {
        acked.push(name);
        if (times && !after) after = name;
      }
      if (after && acked.length >= acked.indexOf(after) + 20) break;
      await sleep(50);
    }
    await failover;
    const held = await sitesHold(b, [after], 60_000);
    const allHeld = await sitesHold(b, acked, 60_000);
    const window = now() - t0;
    const a = await auditSites(b, d);
    const resume = held ? held - times!.promotedAt : Infinity;
    const exact = allHeld && a.gaps + a.repeated + a.differ === 0;
    return [
      [
        `(c) ${SITES} connected sites: each caught up exactly`,
        exact ? 'yes' : 'NO',
        `${acked.length} writes answered 2xx, all at every site; ${a.gaps} with a gap, ${a.repeated} applied out of order or twice, ${a.differ} unlike the control plane's set`,
      ],
      ['(c) kill -9 → promotion', seconds(times!.promotedAt - times!.killedAt), ''],
      [
        `(c) promotion → all ${SITES} sites hold a write made after it`,
        seconds(resume),
        `goal ≤ ${GOAL_RESUME_S} s: ${met(resume <= GOAL_RESUME_S * 1000)}; site process CPU ${(((procStat(b.children[0]!.proc.pid!).cpuMs - spcpu0) / window) * 100).toFixed(0)} % of a core; load ${loadAverage()}`,
      ],
    ];
  } finally {
    await b.stop();
  }
}

function printTable(title: string, rows: Row[]): void {
  const w = [0, 0];
  for (const [a, b] of rows) {
    w[0] = Math.max(w[0]!, a.length);
    w[1] = Math.max(w[1]!, b.length);
  }
  process.stdout.write(`\n${title}\n`);
  for (const [a, b, c] of rows) process.stdout.write(`${a.padEnd(w[0]!)}  ${b.padEnd(w[1]!)}  ${c}\n`);
}

async function main(): Promise<void> {
  const bundle = join(process.cwd(), 'build', 'edgeplane.cjs');
  if (!existsSync(bundle) || process.env.BENCH_BUILD !== '0') {
    const r = spawnSync('npm', ['run', 'build', '--', '--bundle-only'], { stdio: 'inherit' });
    if (r.status !== 0) throw new Error('npm run build failed');
  }
  const kinds = (process.env.BENCH_FAILOVER_DEPLOYMENTS ?? 'sentinel,cluster').split(',');
  const only = process.env.BENCH_FAILOVER_ONLY ?? 'abc';
  const alone = await helpersAlone();
  for (const kind of kinds) {
    const rows: Row[] = [];
    const load0 = loadAverage();
    if (only.includes('a')) rows.push(...(await configChurn(kind)));
    if (only.includes('b')) rows.push(...(await delivery(kind)));
    if (only.includes('c')) rows.push(...(await connectedSites(kind)));
    printTable(
      `failover bench: ${kind}; product = build/edgeplane.cjs; ${cpus().length} cores shared with other work; load ${load0} at the start, ${loadAverage()} at the end`,
      rows,
    );
  }
  printTable('the helpers alone', alone);
}

if (process.argv.includes('--producer')) void producerProcess();
else if (process.argv.includes('--sink')) void sinkProcess();
else
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`bench-failover failed: ${err instanceof Error ? err.stack : String(err)}\n`);
      process.exit(1);
    },
  );
