/**
 * `npm run bench:exporter`: the exporter as users run it, against honest floors, in one run.
 * Starts its own redis-server and, each in its own process (scripts/bench-parties.ts): the sink
 * (scripts/sink.c, compiled with cc at the start: C on one epoll loop, requests parsed by hand,
 * 200, keep-alive; BENCH_SINK=node: the same in raw node:net), the sink's load generator
 * (wrk, 64 connections, one POST at a time on each, or raw node:net when wrk is not to be had or
 * BENCH_SINK_LOAD=node: the sink measured alone; it must take at least 3× the fastest floor's
 * rate, so the sink never sets the pace; the generator's own CPU a request is printed beside it),
 * and, in plain Node, the plain floor (XREAD + one undici POST per message, nothing
 * acknowledged), the acking floor (XREADGROUP, one POST per message, XACK, a slot freed once its
 * XACK is confirmed) and, above max-in-flight 1, the batched acking floor (the same with one XACK
 * under way at a time carrying every id handled meanwhile, as the product acks); and the product
 * (`npm run build` → `node build/edgeplane.cjs`, API and exporter runtime in one process, as
 * `npm start` runs it). BENCH_MESSAGES (100,000) messages of ~200 bytes are
 * pre-filled; each product run configures a fresh exporter through the API (two filters, two
 * variables, a JSON data template; start-position beginning) and, with BENCH_FEATURES (default
 * on), the feature runs: `batch` of 100 at each max-in-flight, `ordering-key` with 64 keys and
 * `signing` at 64. Every party runs once per round, BENCH_ROUNDS (3) rounds interleaved (every
 * other one in reverse order), the best of each kept; each ratio is printed of the best rates and
 * as the median of the two parties' ratios round by round. Rates are measured at the sink (first to last message). Prints each party's
 * rate, the CPU µs per message of the party itself (the product's from /proc, counted after the
 * run's login, a helper's as it reports it), of the sink and of the redis-server (the bus's work a
 * message, on the same two cores), the ratios and their goals, the sink's CPU capacity (1 s ÷ its
 * CPU a message when measured alone) ÷ the fastest floor, and the load average;
 * then the idle figures (1,000 exporters over 100 idle topics; BENCH_IDLE_SECONDS, 0 skips).
 * BENCH_IN_FLIGHT (default "1,64"), BENCH_PROFILE=1 (the product runs with --cpu-prof into
 * ./profiles; the floors, the Node sink (BENCH_SINK=node) and the node:net load generator into
 * ./profiles/helpers),
 * BENCH_ONLY=<regular expression> (only the parties whose name matches, e.g. to profile one),
 * BENCH_THREADED_FLOOR=1 (also the threaded acking floor at each max-in-flight:
 * scripts/bench-parties.ts),
 * BENCH_BASELINE=<path of another build's edgeplane.cjs> (that build in a process of its own
 * beside ours, as party `baseline N` at each max-in-flight, and product ÷ baseline; with the
 * features also `batch-100 N baseline` and `signing 64 baseline`).
 * Every loop is bounded.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { JsonObject } from '../src/lib/json.js';
import {
  ackingFloor,
  batchedFloor,
  loadSink,
  plainFloor,
  sinkLoadGenerator,
  startNativeSink,
  startSink,
  threadedFloor,
} from './bench-parties.js';
import { createClient } from 'redis';
import { openRedisBus } from '../src/bus/redis-bus.js';
import { startRuntime } from '../src/exporter/runtime.js';
import { setLogLevel } from '../src/lib/log.js';
import { configKey } from '../src/store/keys.js';
import { openRedisStore } from '../src/store/redis.js';
import type { Store } from '../src/store/store.js';
import { startRedis } from '../test/helpers/redis.js';
import { cpuMicros, login as loginAs, serverPid, startProduct as startBundle } from './product-proc.js';

const messages = Number(process.env.BENCH_MESSAGES ?? 100_000);
const idleSeconds = Number(process.env.BENCH_IDLE_SECONDS ?? 30);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const inFlightSettings = (process.env.BENCH_IN_FLIGHT ?? '1,64').split(',').map((v) => (v === 'auto' ? v : Number(v)));
const topic = 'bench';

const arcMessages = Number(process.env.BENCH_ARC_MESSAGES ?? 8000);
const arcEnv = {
  ARC_CAP1: process.env.BENCH_ARC_CAP1 ?? '32',
  ARC_CAP2: process.env.BENCH_ARC_CAP2 ?? '8',
  ARC_SWITCH: String(Math.floor(arcMessages / 2)),
  ARC_SERVICE_MS: process.env.BENCH_ARC_SERVICE_MS ?? '20',
};

type SinkStats = { count: number; first: number; last: number };
async function sinkStats(sink: string, path: string): Promise<SinkStats> {
  const r = await fetch(`${sink}/?path=${encodeURIComponent(path)}`);
  return (await r.json()) as SinkStats;
}

/** Waits until the sink got `messages` requests on `path`; the rate from its first to its last. */
async function rateAt(sink: string, path: string, want = messages): Promise<number> {
  let s: SinkStats = { count: 0, first: 0, last: 0 };
  for (let i = 0; i < 6000 && s.count < want; i++) {
    await new Promise((r) => setTimeout(r, 50));
    s = await sinkStats(sink, path);
  }
  if (s.count < want) throw new Error(`${path}: only ${s.count} of ${want} arrived`);
  return (s.count - 1) / ((s.last - s.first) / 1000);
}

function payload(i: number): string {
  const base = JSON.stringify({
    temp: 15 + (i % 20),
    level: 'info',
    sensor: `sensor-${String(i % 1000).padStart(5, '0')}`,
    seq: i,
    key: `k${i % 64}`,
  });
  return base.slice(0, -1) + `,"pad":"${'x'.repeat(Math.max(0, 190 - base.length))}"}`;
}

async function prefill(url: string, count = messages, into = topic): Promise<void> {
  const c = createClient({ url });
  await c.connect();
  for (let i = 0; i < count; i += 1000) {
    const batch = [];
    // Sent together: node-redis pipelines concurrent commands on one connection.
    for (let j = i; j < Math.min(count, i + 1000); j++)
      batch.push(c.sendCommand(['XADD', `volga:${into}`, '*', 'payload', payload(j), 'producer-name', 'bench']));
    await Promise.all(batch);
  }
  await c.close();
}

/** A product process; its exporters are placed on its own site only (two builds share one store). */
type Product = { api: string; site: string; child: ChildProcess; stop(): Promise<void> };

/** A fresh token per run: tokens expire after 10 minutes, longer than a whole bench. */
const login = (api: string) => loginAs(api, 'bench-password-1');

/** The built bundle in its own process, API and exporter runtime, as a user starts it. */
async function startProduct(redisUrl: string, env: Record<string, string> = {}, bundle?: string): Promise<Product> {
  const p = await startBundle({ REDIS_URL: redisUrl, ADMIN_PASSWORD: 'bench-password-1', ...env }, bundle);
  return { api: p.url, site: env.SITE ?? 'bench', child: p.child, stop: p.stop };
}

/** The exporter every product run configures; `extra` on top (a feature under test). */
function benchHook(
  name: string,
  site: string,
  topicName: string,
  url: string,
  inFlight: number | 'auto',
  extra: JsonObject,
) {
  return {
    name,
    topics: [topicName],
    'start-position': 'beginning',
    'site-placement': { sites: [site] },
    'max-in-flight': inFlight,
    'retry-interval': '50ms',
    'max-retry-interval': '1s',
    url,
    'data-format': 'json',
    'match-string': ['"temp"'],
    'no-match-re': ['"level":"debug"'],
    variables: [
      { name: 'TEMP', 'value-from-message': { 'json-pointer': '/payload/temp' } },
      { name: 'KEY', 'value-from-message': { 'json-pointer': '/payload/key' } },
    ],
    data: '{"site":"${SYS_SITE}","id":"${MSG_SEQNO}","temp":${TEMP}}',
    ...extra,
  };
}

async function productRun(
  p: Product,
  sink: string,
  inFlight: number | 'auto',
  name: string,
  opts: { topic?: string; count?: number; extra?: JsonObject; token?: string } = {},
): Promise<number> {
  const headers = { authorization: `Bearer ${opts.token ?? (await login(p.api))}`, 'content-type': 'application/json' };
  const put = await fetch(`${p.api}/v1/config/volga/webhooks/${name}`, {
    method: 'PUT',
    headers,
    signal: AbortSignal.timeout(30_000),
    body: JSON.stringify(benchHook(name, p.site, opts.topic ?? topic, `${sink}/${name}`, inFlight, opts.extra ?? {})),
  });
  if (put.status !== 201) throw new Error(`PUT ${name}: ${put.status} ${await put.text()}`);
  const rate = await rateAt(sink, `/${name}`, opts.count ?? messages);
  const del = await fetch(`${p.api}/v1/config/volga/webhooks/${name}`, {
    method: 'DELETE',
    headers: { ...headers, authorization: `Bearer ${opts.token ?? (await login(p.api))}` },
    signal: AbortSignal.timeout(30_000),
  });
  if (del.status !== 204) throw new Error(`DELETE ${name}: ${del.status}`);
  return rate;
}

/** The signing key of the signing run, in a vault of the product's strongbox. */
async function signingSecret(p: Product): Promise<void> {
  const headers = { authorization: `Bearer ${await login(p.api)}`, 'content-type': 'application/json' };
  const key = 'whsec_' + Buffer.from('bench-signing-key-0123456789abcdef').toString('base64');
  for (const [path, body] of [
    ['strongbox/vaults/bench', { name: 'bench' }],
    ['strongbox/vaults/bench/secrets/sig', { name: 'sig', data: { key } }],
  ] as const) {
    const r = await fetch(`${p.api}/v1/config/${path}`, { method: 'PUT', headers, body: JSON.stringify(body) });
    if (r.status !== 201) throw new Error(`PUT ${path}: ${r.status} ${await r.text()}`);
  }
}

async function idleRun(url: string, store: Store): Promise<void> {
  const bus = await openRedisBus(url);
  const ops = Array.from({ length: 1000 }, (_, i) => ({
    op: 'put' as const,
    key: configKey('default', `volga/webhooks/idle-${i}`),
    value: {
      name: `idle-${i}`,
      topics: [`idle-topic-${i % 100}`],
      'site-placement': { 'all-sites': true },
      url: 'http://127.0.0.1:9/x',
      data: '${MSG}',
      'match-string': ['x'],
      'no-match-re': ['debug'],
    },
  }));
  for (let i = 0; i < ops.length; i += 100) await store.commit(ops.slice(i, i + 100));
  const rt = await startRuntime({ settings: { site: 'bench', globalDomain: 'g' }, store, bus });
  for (let i = 0; i < 1200; i++) {
    let ready = 0;
    for (let j = 0; j < 1000; j++) if (rt.exporterState('default', `idle-${j}`)?.status === 'ready') ready++;
    if (ready === 1000) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  global.gc?.();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, idleSeconds * 1000));
  const cpu = process.cpuUsage(cpu0);
  const cpuPct = ((cpu.user + cpu.system) / 1000 / (performance.now() - t0)) * 100;
  const rss = process.memoryUsage().rss / 1024 / 1024;
  const c = createClient({ url });
  await c.connect();
  const clients =
    String(await c.sendCommand(['CLIENT', 'LIST']))
      .split('\n')
      .filter((l) => l.trim()).length - 1;
  await c.close();
  process.stdout.write(
    `1,000 exporters over 100 idle topics: RSS ${rss.toFixed(0)} MB (goal ≤ 300), CPU ${cpuPct.toFixed(1)} % over ${idleSeconds} s (goal < 5), Redis connections ${clients} (goal ≤ 8; store and bus of this process)\n`,
  );
  await rt.stop(1000);
  await bus.close();
}

/** A party measured at the sink: its rate, and a helper party's own CPU time (µs) when it reports it. */
type Party = {
  name: string;
  /** Before the party's CPU is counted: what is no part of its work (a product run's login). */
  prepare?(): Promise<void>;
  run(path: string): Promise<{ rate: number; cpu?: number }>;
  product?: Product;
};

function parties(redisUrl: string, sink: string, product: Product, baseline: Product | undefined): Party[] {
  const list: Party[] = [];
  const helper = (name: string, go: (target: string) => Promise<number>): Party => ({
    name,
    async run(path) {
      // Listened for at once: the party may finish before the sink has been polled.
      const done = go(`${sink}${path}`);
      // A party that fails ends the wait for its rate at once, and the bench stops through its
      // cleanup (no unhandled rejection that would leave the sink and Redis running).
      const failed = done.then(() => new Promise<never>(() => {}));
      const rate = await Promise.race([rateAt(sink, path), failed]);
      return { rate, cpu: await done };
    },
  });
  const ours = (name: string, inFlight: number | 'auto', extra: JsonObject = {}, p = product): Party => {
    // A fresh token per run, made before the product's CPU is counted: a login's password hash
    // (scrypt, tens of ms of CPU) is no part of delivering the messages.
    let token = '';
    return {
      name,
      product: p,
      prepare: async () => void (token = await login(p.api)),
      run: async (path) => ({ rate: await productRun(p, sink, inFlight, path.slice(1), { extra, token }) }),
    };
  };
  list.push(helper('sink alone', (t) => loadSink(t, 64, messages)));
  let groups = 0;
  for (const n of inFlightSettings) {
    const f = n === 'auto' ? 64 : n;
    list.push(helper(`plain floor ${n}`, (t) => plainFloor(redisUrl, t, f, messages, topic)));
    list.push(helper(`acking floor ${n}`, (t) => ackingFloor(redisUrl, t, f, messages, topic, `floor-${++groups}`)));
    if (f > 1)
      list.push(
        helper(`batched acking floor ${n}`, (t) => batchedFloor(redisUrl, t, f, messages, topic, `floor-${++groups}`)),
      );
    if (process.env.BENCH_THREADED_FLOOR === '1')
      list.push(
        helper(`threaded acking floor ${n}`, (t) =>
          threadedFloor(redisUrl, t, f, messages, topic, `floor-${++groups}`),
        ),
      );
    list.push(ours(`product ${n}`, n));
    if (baseline) list.push(ours(`baseline ${n}`, n, {}, baseline));
    if (n !== 'auto' && features) {
      list.push(ours(`batch-100 ${n}`, n, batch100));
      if (baseline) list.push(ours(`batch-100 ${n} baseline`, n, batch100, baseline));
    }
  }
  if (features) {
    list.push(ours('ordering-key 64 keys 64', 64, { 'ordering-key': '${KEY}' }));
    list.push(ours('signing 64', 64, signing));
    if (baseline) list.push(ours('signing 64 baseline', 64, signing, baseline));
  }
  return list;
}

const features = process.env.BENCH_FEATURES !== '0';
const batch100 = { batch: { 'max-messages': 100, 'max-wait': '50ms' } };
const signing = { signing: { vault: 'bench', secret: 'sig', key: 'key' } };

/** Per party: its best round's rate, and in that round the CPU µs a message of the party itself (product or helper) and of the sink. */
type Best = { rate: number; cpu: number; sinkCpu: number; redisCpu: number; all: number[]; cpus: number[] };

function report(best: Map<string, Best>): string {
  const r = (k: string) => best.get(k)?.rate ?? NaN;
  const f = (x: number) => (Number.isFinite(x) ? x.toFixed(0) : '—');
  const q = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : '—');
  // a ÷ b of the best rates, and the median of the two parties' ratios round by round (their
  // rounds run minutes apart at most, so it moves less with the load of a shared machine).
  const ratio = (a: string, b: string) => {
    const ra = best.get(a)?.all ?? [];
    const rb = best.get(b)?.all ?? [];
    const per = ra.map((x, i) => x / (rb[i] ?? NaN)).sort((x, y) => x - y);
    const mid = per.length === 0 ? NaN : (per[(per.length - 1) >> 1]! + per[per.length >> 1]!) / 2;
    return `${q(r(a) / r(b))} (rounds' median ${q(mid)})`;
  };
  const lines: string[] = [];
  for (const [k, v] of best)
    lines.push(
      `  ${k.padEnd(24)} ${f(v.rate).padStart(7)} msg/s, CPU µs/msg: own ${v.cpu.toFixed(1)}, sink ${v.sinkCpu.toFixed(1)}, redis ${v.redisCpu.toFixed(1)} (rounds, msg/s and own CPU µs/msg: ${v.all.map((x, i) => `${f(x)} ${v.cpus[i]!.toFixed(1)}`).join(', ')})`,
    );
  // The fastest floor measured (BENCH_ONLY may leave some out; none: NaN, printed —).
  const measured = inFlightSettings
    .flatMap((n) => [r(`plain floor ${n}`), r(`acking floor ${n}`)])
    .filter(Number.isFinite);
  const floors = measured.length > 0 ? Math.max(...measured) : NaN;
  const alone = best.get('sink alone');
  if (alone)
    lines.push(
      `sink alone: load generator ${sinkLoadGenerator()}, its own CPU ${alone.cpu.toFixed(1)} µs a request (1 s ÷ it: ${f(1e6 / alone.cpu)} msg/s), the sink's ${alone.sinkCpu.toFixed(1)} µs`,
    );
  lines.push(`sink alone ÷ fastest floor = ${q(r('sink alone') / floors)} (goal ≥ 3)`);
  // What one core of the sink's own CPU would take: its CPU a message in the run alone.
  if (alone?.sinkCpu)
    lines.push(
      `sink CPU capacity (1 s ÷ its CPU a message alone: ${f(1e6 / alone.sinkCpu)} msg/s) ÷ fastest floor = ${q(1e6 / alone.sinkCpu / floors)}`,
    );
  for (const n of inFlightSettings)
    lines.push(
      `max-in-flight ${n}: product ÷ plain floor ${ratio(`product ${n}`, `plain floor ${n}`)}` +
        `${n === 64 ? ' (goal ≥ 0.9)' : ''}, ÷ acking floor ${ratio(`product ${n}`, `acking floor ${n}`)}` +
        `${n === 1 ? ' (goal ≥ 0.9)' : ''}` +
        (features ? `; batch of 100 ÷ single ${ratio(`batch-100 ${n}`, `product ${n}`)} (goal ≥ 5)` : '') +
        (best.has(`baseline ${n}`) ? `; product ÷ baseline ${ratio(`product ${n}`, `baseline ${n}`)}` : ''),
    );
  for (const n of inFlightSettings)
    if (best.has(`batched acking floor ${n}`))
      lines.push(
        `max-in-flight ${n}: batched acking floor ÷ plain floor ${ratio(`batched acking floor ${n}`, `plain floor ${n}`)}, ` +
          `product ÷ batched acking floor ${ratio(`product ${n}`, `batched acking floor ${n}`)}`,
      );
  for (const n of inFlightSettings)
    if (best.has(`threaded acking floor ${n}`))
      lines.push(
        `max-in-flight ${n}: threaded acking floor ÷ plain floor ${ratio(`threaded acking floor ${n}`, `plain floor ${n}`)}, ` +
          `÷ acking floor ${ratio(`threaded acking floor ${n}`, `acking floor ${n}`)}`,
      );
  if (features) {
    lines.push(
      `ordering-key 64 keys ÷ unordered at 64: ${ratio('ordering-key 64 keys 64', 'product 64')} (goal ≥ 0.9)`,
    );
    lines.push(`signing on ÷ off at 64: ${ratio('signing 64', 'product 64')} (goal ≥ 0.9)`);
  }
  return lines.join('\n') + '\n';
}

async function main(): Promise<void> {
  setLogLevel('warn');
  const redis = await startRedis();
  const sink = process.env.BENCH_SINK === 'node' ? await startSink({}) : await startNativeSink();
  process.stdout.write(
    `sink: ${process.env.BENCH_SINK === 'node' ? 'Node (BENCH_SINK=node)' : 'native (scripts/sink.c)'}\n`,
  );
  let product: Product | undefined;
  let baseline: Product | undefined;
  try {
    const redisPid = await serverPid(redis.url);
    process.stdout.write(`pre-filling ${messages} messages of ~200 bytes...\n`);
    await prefill(redis.url);
    const dataDir = mkdtempSync(join(tmpdir(), 'edgeplane-bench-'));
    product = await startProduct(redis.url, { DATA_DIR: dataDir });
    await signingSecret(product);
    const other = process.env.BENCH_BASELINE;
    // The other build shares the store, so it unseals it with the key ours wrote.
    if (other)
      baseline = await startProduct(
        redis.url,
        { SITE: 'baseline', STRONGBOX_KEY_FILE: join(dataDir, 'strongbox.key') },
        other,
      );
    const load0 = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
    const best = new Map<string, Best>();
    const only = process.env.BENCH_ONLY ? new RegExp(process.env.BENCH_ONLY) : undefined;
    const list = parties(redis.url, sink.url, product, baseline).filter((p) => !only || only.test(p.name));
    // The sink JIT-warm before it is measured alone (2,000 POSTs, not counted), as a floor warms up before its own.
    if (list.some((p) => p.name === 'sink alone')) await loadSink(`${sink.url}/warm-sink`, 64, 2000);
    // Interleaved, best of each: the load of a shared machine drifts between runs.
    for (let round = 1; round <= rounds; round++)
      // Every other round in reverse order: of two parties compared, neither always runs first.
      for (const [i, party] of round % 2 === 0 ? [...list.entries()].reverse() : list.entries()) {
        await party.prepare?.();
        const proc = party.product?.child.pid;
        const cpu0 = proc ? cpuMicros(proc) : 0;
        const sink0 = cpuMicros(sink.child.pid!);
        const redis0 = cpuMicros(redisPid);
        const r = await party.run(`/${party.name.replace(/[^a-z0-9]+/g, '-')}-${round}-${i}`);
        const cpu = (proc ? cpuMicros(proc) - cpu0 : (r.cpu ?? 0)) / messages;
        const sinkCpu = (cpuMicros(sink.child.pid!) - sink0) / messages;
        const redisCpu = (cpuMicros(redisPid) - redis0) / messages;
        const b = best.get(party.name) ?? { rate: 0, cpu: 0, sinkCpu: 0, redisCpu: 0, all: [], cpus: [] };
        b.all.push(r.rate);
        b.cpus.push(cpu);
        if (r.rate > b.rate) Object.assign(b, { rate: r.rate, cpu, sinkCpu, redisCpu });
        best.set(party.name, b);
      }
    const load1 = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
    process.stdout.write(
      `${messages} messages, best of ${rounds} rounds; load average ${load0} at the start, ${load1} at the end\n` +
        report(best),
    );
    await product.stop();
    product = undefined;
    await baseline?.stop();
    baseline = undefined;
    if (idleSeconds > 0) {
      const idleStore = await openRedisStore(redis.url);
      await idleRun(redis.url, idleStore);
      await idleStore.close();
    }
  } finally {
    // Waited for: the product logs while stopping, into the pipe this process holds.
    await product?.stop();
    await baseline?.stop();
    sink.child.kill();
    await redis.stop();
  }
}

/**
 * `npm run bench:arc` (BENCH_MODE=arc): max-in-flight auto against fixed settings, on a sink
 * whose capacity drops mid-run (BENCH_ARC_CAP1 → BENCH_ARC_CAP2 requests at once, default
 * 32 → 8, each held BENCH_ARC_SERVICE_MS = 20 ms; beyond it 503 at once). Retries: 50 ms
 * back-off up to 1 s. Prints the delivered rate of each setting and auto ÷ best fixed.
 */
async function arcMain(): Promise<void> {
  const redis = await startRedis();
  const sink = await startSink(arcEnv);
  let product: Product | undefined;
  try {
    await prefill(redis.url, arcMessages, 'arc');
    product = await startProduct(redis.url);
    const settings: Array<number | 'auto'> = (process.env.BENCH_ARC_SETTINGS ?? '4,8,16,32,64,auto')
      .split(',')
      .map((v) => (v === 'auto' ? v : Number(v)));
    const rates = new Map<string, number>();
    for (let round = 1; round <= rounds; round++)
      for (const n of settings) {
        const r = await productRun(product, sink.url, n, `arc-${n}-${round}`, { topic: 'arc', count: arcMessages });
        rates.set(String(n), Math.max(rates.get(String(n)) ?? 0, r));
        process.stdout.write(`  round ${round} max-in-flight ${n}: ${r.toFixed(0)} msg/s\n`);
      }
    let best = 0;
    let bestName = '';
    for (const [k, v] of rates)
      if (k !== 'auto' && v > best) {
        best = v;
        bestName = k;
      }
    const auto = rates.get('auto') ?? 0;
    process.stdout.write(
      `capacity ${arcEnv.ARC_CAP1} → ${arcEnv.ARC_CAP2} at ${arcEnv.ARC_SWITCH} of ${arcMessages}, ${arcEnv.ARC_SERVICE_MS} ms each: ` +
        [...rates].map(([k, v]) => `${k}: ${v.toFixed(0)}`).join(', ') +
        ` msg/s (best of ${rounds}); auto ÷ best fixed (${bestName}) = ${(auto / best).toFixed(2)} (goal ≥ 0.9)\n`,
    );
  } finally {
    // Waited for: the product logs while stopping, into the pipe this process holds.
    await product?.stop();
    sink.child.kill();
    await redis.stop();
  }
}

(process.env.BENCH_MODE === 'arc' ? arcMain() : main()).then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  },
);
