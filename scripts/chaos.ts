/**
 * `npm run chaos`: the fault-injection suite. Every scenario runs real processes — its own
 * redis-server, the webhook sink in a child process, exporter runtimes in child processes
 * (test/helpers/exporter-proc.ts) — and prints one row of figures:
 * 1. kill -9 of the exporter process CHAOS_KILLS times (10) while it delivers CHAOS_MESSAGES
 *    (100,000) at max-in-flight 16: 0 lost, duplicates per kill ≤ max-in-flight.
 * 2. Redis killed (SIGKILL) and restarted with its AOF mid-stream: 0 lost, first delivery
 *    ≤ 2 s after Redis is back.
 * 3. The webhook answers 503 for CHAOS_OUTAGE_SECONDS (30) with `tries: 0`: all delivered in
 *    order after it recovers; the waits between attempts never exceed `max-retry-interval`.
 * 4. Two processes of two sites share an exporter; one is killed: the survivor delivers what
 *    the dead one had pending within the documented bound (5 s).
 * 5. A torn last line in each embedded file (store.aof, bus.jsonl): cut at open, and the
 *    record appended next survives the following restart.
 * 6. SIGTERM while POSTs take 1 s: the process drains and exits 0; after a restart nothing is
 *    lost and nothing is sent again.
 * `runChaos` is also called by test/e2e/chaos.test.ts with small numbers. Every loop is bounded.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, mkdtempSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createClient } from 'redis';
import { openEmbeddedBus } from '../src/bus/embedded-bus.js';
import { groupName } from '../src/exporter/runtime.js';
import type { JsonObject } from '../src/lib/json.js';
import { setLogLevel } from '../src/lib/log.js';
import { openEmbeddedStore } from '../src/store/embedded.js';
import { openEnv, spawnExporterProc, type Env, type ExporterProc } from '../test/helpers/exporter-proc.js';
import { startRedis, type RedisServer } from '../test/helpers/redis.js';

export type ChaosOptions = {
  messages: number;
  kills: number;
  maxInFlight: number;
  outageSeconds: number;
  /** Messages of the Redis-restart, failover and outage scenarios. */
  redisMessages: number;
  failoverMessages: number;
  outageMessages: number;
  sigtermMessages: number;
  /** Scenario numbers to run (all when empty). */
  only: number[];
};

export type Row = { scenario: string; figures: string; ok: boolean };

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Polls `cond` every 50 ms until it holds; throws after `timeoutMs`. */
async function until(cond: () => Promise<boolean> | boolean, what: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`chaos: timed out waiting for ${what}`);
    await sleep(50);
  }
}

// The sink: counts each body (`m<i>`), answers per the mode, records failing attempts' times.
const sinkCode = `
const http = require('node:http');
let mode = { status: 200, delayMs: 0 };
let counts = new Map(); let requests = 0; let failTimes = []; let outOfOrder = 0; let maxFirst = -1;
let mark = 0; let firstOkAfterMark = null;
function stats() {
  let dups = 0; for (const n of counts.values()) dups += n - 1;
  return { requests, distinct: counts.size, dups, outOfOrder, failTimes, firstOkAfterMark, seen: [...counts.keys()] };
}
const srv = http.createServer((req, res) => {
  let body = '';
  req.on('data', (d) => (body += d));
  req.on('end', () => {
    if (req.url === '/_mode') { mode = JSON.parse(body); res.end('{}'); return; }
    if (req.url === '/_mark') { mark = Date.now(); firstOkAfterMark = null; res.end('{}'); return; }
    if (req.url === '/_reset') { counts = new Map(); requests = 0; failTimes = []; outOfOrder = 0; maxFirst = -1; mark = 0; firstOkAfterMark = null; res.end('{}'); return; }
    if (req.url === '/_stats' || req.url === '/_count') {
      const s = stats();
      if (req.url === '/_count') { delete s.seen; delete s.failTimes; }
      res.end(JSON.stringify(s)); return;
    }
    requests++;
    const m = mode;
    setTimeout(() => {
      if (m.status >= 300) { failTimes.push(Date.now()); res.writeHead(m.status); res.end('unavailable'); return; }
      const n = counts.get(body);
      if (n === undefined) {
        const i = Number(body.slice(1));
        if (i < maxFirst) outOfOrder++; else maxFirst = i;
        if (mark && firstOkAfterMark === null) firstOkAfterMark = Date.now();
      }
      counts.set(body, (n ?? 0) + 1);
      res.writeHead(200); res.end('ok');
    }, m.delayMs);
  });
});
srv.keepAliveTimeout = 60000;
srv.listen(0, '127.0.0.1', () => process.stdout.write('PORT ' + srv.address().port + '\\n'));
`;

type SinkStats = {
  requests: number;
  distinct: number;
  dups: number;
  outOfOrder: number;
  failTimes: number[];
  firstOkAfterMark: number | null;
  seen: string[];
};

type Sink = {
  url: string;
  child: ChildProcess;
  call(path: string, body?: JsonObject): Promise<SinkStats>;
  count(): Promise<SinkStats>;
};

async function startSink(): Promise<Sink> {
  const child = spawn(process.execPath, ['-e', sinkCode], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      const m = /PORT (\d+)/.exec(d.toString());
      if (m) resolve(Number(m[1]));
    });
    child.once('exit', () => reject(new Error('the sink exited')));
  });
  const url = `http://127.0.0.1:${port}`;
  const call = async (path: string, body?: JsonObject): Promise<SinkStats> => {
    const r = await fetch(url + path, { method: body ? 'POST' : 'GET', body: body ? JSON.stringify(body) : undefined });
    return (await r.json()) as SinkStats;
  };
  return { url, child, call, count: () => call('/_count') };
}

const payload = (i: number) => `m${i}`;

/** A plain client for the suite's own commands (its errors are the scenarios' business). */
async function client(url: string): Promise<ReturnType<typeof createClient>> {
  const c = createClient({ url });
  c.on('error', () => undefined);
  await c.connect();
  return c;
}

/** Redis is back once it answers commands (after loading its AOF). */
async function untilServing(url: string): Promise<void> {
  const c = await client(url);
  try {
    await until(
      () =>
        c.ping().then(
          () => true,
          () => false,
        ),
      'Redis to load its AOF',
      60_000,
    );
  } finally {
    await c.close().catch(() => undefined);
  }
}

async function produce(url: string, topic: string, from: number, to: number): Promise<void> {
  const c = await client(url);
  for (let i = from; i < to; i += 1000) {
    const batch = [];
    for (let j = i; j < Math.min(to, i + 1000); j++)
      batch.push(c.sendCommand(['XADD', `volga:${topic}`, '*', 'payload', payload(j)]));
    await Promise.all(batch);
  }
  await c.close();
}

async function webhook(env: Env, sink: Sink, name: string, extra: JsonObject): Promise<void> {
  await env.webhook({
    name,
    topics: [name],
    'start-position': 'beginning',
    'site-placement': { 'all-sites': true },
    url: `${sink.url}/${name}`,
    data: '${MSG_PAYLOAD}',
    ...extra,
  });
}

/** One scenario's Redis, store/bus connection and sink, disposed of whatever happens. */
async function withWorld<T>(
  persist: boolean,
  fn: (w: { redis: RedisServer; env: Env; sink: Sink }) => Promise<T>,
): Promise<T> {
  const redis = await startRedis({ persist });
  const sink = await startSink();
  const env = await openEnv(redis.url);
  const procs: ExporterProc[] = [];
  try {
    return await fn({ redis, env, sink });
  } finally {
    for (const p of procs) await p.kill9();
    await env.close().catch(() => undefined);
    sink.child.kill('SIGKILL');
    await redis.dispose();
  }
}

async function killNine(o: ChaosOptions): Promise<Row> {
  return withWorld(false, async ({ redis, env, sink }) => {
    await webhook(env, sink, 'kill', { 'max-in-flight': o.maxInFlight });
    await produce(redis.url, 'kill', 0, o.messages);
    const started = Date.now();
    let proc = await spawnExporterProc(redis.url, 'chaos');
    const perKill: number[] = [];
    try {
      let dupsAtKill = 0;
      for (let k = 1; k <= o.kills; k++) {
        const at = Math.floor((k * o.messages) / (o.kills + 1));
        await until(async () => (await sink.count()).distinct >= at, `${at} delivered`, 600_000);
        const s = await sink.count();
        if (k > 1) perKill.push(s.dups - dupsAtKill);
        dupsAtKill = s.dups;
        await proc.kill9();
        proc = await spawnExporterProc(redis.url, 'chaos');
      }
      await until(async () => (await sink.count()).distinct >= o.messages, 'every message', 600_000);
      await sleep(500);
      const s = await sink.count();
      perKill.push(s.dups - dupsAtKill);
      const lost = o.messages - s.distinct;
      const rate = o.messages / ((Date.now() - started) / 1000);
      const maxPerKill = Math.max(0, ...perKill);
      return {
        scenario: `1. kill -9 ×${o.kills} during ${o.messages} messages (max-in-flight ${o.maxInFlight})`,
        figures: `lost ${lost}; duplicates ${s.dups} (per kill ${perKill.join('/')}, max ${maxPerKill} ≤ ${o.maxInFlight}); ${rate.toFixed(0)} msg/s with the restarts`,
        ok: lost === 0 && maxPerKill <= o.maxInFlight,
      };
    } finally {
      await proc.stop();
    }
  });
}

async function redisRestart(o: ChaosOptions): Promise<Row> {
  return withWorld(true, async ({ redis, env, sink }) => {
    await webhook(env, sink, 'rr', { 'max-in-flight': 4 });
    const half = Math.floor(o.redisMessages / 2);
    await produce(redis.url, 'rr', 0, half);
    const proc = await spawnExporterProc(redis.url, 'chaos');
    try {
      await until(async () => (await sink.count()).distinct >= half / 4, 'a quarter delivered', 120_000);
      await redis.stop({ hard: true });
      await sleep(1000);
      await redis.restart();
      await untilServing(redis.url);
      await sink.call('/_mark', {});
      const back = Date.now();
      await produce(redis.url, 'rr', half, o.redisMessages);
      await until(async () => (await sink.count()).distinct >= o.redisMessages, 'every message', 300_000);
      const s = await sink.count();
      const first = s.firstOkAfterMark === null ? Infinity : s.firstOkAfterMark - back;
      const lost = o.redisMessages - s.distinct;
      return {
        scenario: `2. Redis kill -9 and restart with AOF (${o.redisMessages} messages)`,
        figures: `lost ${lost}; first delivery ${first} ms after Redis is back (≤ 2000); duplicates ${s.dups}`,
        ok: lost === 0 && first <= 2000,
      };
    } finally {
      await proc.stop();
    }
  });
}

async function outage(o: ChaosOptions): Promise<Row> {
  return withWorld(false, async ({ redis, env, sink }) => {
    const maxRetryMs = 2000;
    await webhook(env, sink, 'down', { tries: 0, 'retry-interval': '100ms', 'max-retry-interval': `${maxRetryMs}ms` });
    await sink.call('/_mode', { status: 503, delayMs: 0 });
    const proc = await spawnExporterProc(redis.url, 'chaos');
    try {
      await produce(redis.url, 'down', 0, o.outageMessages);
      await sleep(o.outageSeconds * 1000);
      const during = await sink.call('/_stats');
      await sink.call('/_mode', { status: 200, delayMs: 0 });
      const up = Date.now();
      await until(async () => (await sink.count()).distinct >= o.outageMessages, 'every message', 120_000);
      const recovered = Date.now() - up;
      const s = await sink.count();
      const gaps = during.failTimes.slice(1).map((t, i) => t - during.failTimes[i]!);
      const maxGap = Math.max(0, ...gaps);
      const lost = o.outageMessages - s.distinct;
      return {
        scenario: `3. webhook down ${o.outageSeconds} s, tries 0, max-retry-interval ${maxRetryMs} ms (${o.outageMessages} messages)`,
        figures: `${during.failTimes.length} failed attempts, longest wait ${maxGap} ms; after recovery all in ${recovered} ms, lost ${lost}, out of order ${s.outOfOrder}`,
        // A wait is at most max-retry-interval; the gap adds the attempt's round trip.
        ok: lost === 0 && s.outOfOrder === 0 && maxGap <= maxRetryMs + 500 && during.failTimes.length > 1,
      };
    } finally {
      await proc.stop();
    }
  });
}

async function failover(o: ChaosOptions): Promise<Row> {
  return withWorld(false, async ({ redis, env, sink }) => {
    await webhook(env, sink, 'fo', { 'max-in-flight': 4 });
    await sink.call('/_mode', { status: 200, delayMs: 20 });
    await produce(redis.url, 'fo', 0, o.failoverMessages);
    const a = await spawnExporterProc(redis.url, 'site-a');
    let b: ExporterProc | undefined;
    try {
      await until(async () => (await sink.count()).distinct >= 20, 'deliveries by site-a', 60_000);
      b = await spawnExporterProc(redis.url, 'site-b');
      await a.kill9();
      const killed = Date.now();
      // What the dead consumer held when it died.
      const c = await client(redis.url);
      const dead = `site-a:${hostname()}:${a.child.pid}`;
      const raw = (await c.sendCommand([
        'XPENDING',
        'volga:fo',
        groupName('default', 'fo'),
        '-',
        '+',
        '100000',
        dead,
      ])) as unknown[];
      const ids = raw.map((p) => String((p as unknown[])[0]));
      const bodies = new Set<string>();
      for (const id of ids) {
        const e = (await c.sendCommand(['XRANGE', 'volga:fo', id, id])) as unknown[];
        const fields = ((e[0] as unknown[] | undefined)?.[1] ?? []) as string[];
        bodies.add(fields[fields.indexOf('payload') + 1] ?? '');
      }
      await c.close();
      let firstAt = 0;
      await until(
        async () => {
          const seen = new Set((await sink.call('/_stats')).seen);
          const got = [...bodies].filter((x) => seen.has(x)).length;
          if (got > 0 && !firstAt) firstAt = Date.now();
          return got === bodies.size;
        },
        "the dead one's pending entries",
        120_000,
      );
      const allAt = Date.now();
      await until(async () => (await sink.count()).distinct >= o.failoverMessages, 'every message', 300_000);
      const s = await sink.count();
      const lost = o.failoverMessages - s.distinct;
      const took = (firstAt || allAt) - killed;
      return {
        scenario: `4. two sites share an exporter, one killed (${o.failoverMessages} messages)`,
        figures: `${bodies.size} pending on the dead one; survivor took them over ${took} ms after the kill (bound 5000), all delivered after ${allAt - killed} ms; lost ${lost}, duplicates ${s.dups}`,
        ok: lost === 0 && took <= 5000,
      };
    } finally {
      await b?.stop();
    }
  });
}

async function tornLines(): Promise<Row> {
  const dir = mkdtempSync(join(tmpdir(), 'edgeplane-chaos-'));
  try {
    const store = await openEmbeddedStore(dir);
    await store.commit([{ op: 'put', key: 't/a', value: { n: 1 } }]);
    await store.close();
    const bus = openEmbeddedBus(dir);
    await bus.produce('t', { payload: 'a' });
    await bus.close();
    appendFileSync(join(dir, 'store.aof'), '{"r":2,"c":[{"k":"t/x","v":{"n"');
    appendFileSync(join(dir, 'bus.jsonl'), '{"op":"add","topic":"t","id":"9-0","fie');
    const store2 = await openEmbeddedStore(dir);
    await store2.commit([{ op: 'put', key: 't/b', value: { n: 2 } }]);
    await store2.close();
    const bus2 = openEmbeddedBus(dir);
    await bus2.produce('t', { payload: 'b' });
    await bus2.close();
    const store3 = await openEmbeddedStore(dir);
    const keys = (await store3.list('')).map((e) => e.key).join(',');
    await store3.close();
    const bus3 = openEmbeddedBus(dir);
    const info = await bus3.topicInfo('t');
    await bus3.close();
    const storeOk = keys === 't/a,t/b';
    const busOk = info?.length === 2 && info['last-entry']?.payload === 'b';
    return {
      scenario: '5. torn last line in store.aof and bus.jsonl',
      figures: `store.aof: next record kept ${storeOk ? 'yes' : 'NO'} (${keys}); bus.jsonl: next record kept ${busOk ? 'yes' : 'NO'} (${info?.length ?? 0} entries)`,
      ok: storeOk && busOk,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function sigterm(o: ChaosOptions): Promise<Row> {
  return withWorld(false, async ({ redis, env, sink }) => {
    await webhook(env, sink, 'term', { 'max-in-flight': 8 });
    await sink.call('/_mode', { status: 200, delayMs: 1000 });
    await produce(redis.url, 'term', 0, o.sigtermMessages);
    const proc = await spawnExporterProc(redis.url, 'chaos');
    await until(async () => (await sink.count()).distinct >= 8, 'slow POSTs under way', 60_000);
    await sleep(300);
    const t0 = Date.now();
    await proc.stop();
    const stopMs = Date.now() - t0;
    const code = proc.child.exitCode;
    await sink.call('/_mode', { status: 200, delayMs: 0 });
    const again = await spawnExporterProc(redis.url, 'chaos');
    try {
      await until(async () => (await sink.count()).distinct >= o.sigtermMessages, 'every message', 120_000);
      await sleep(300);
      const s = await sink.count();
      const lost = o.sigtermMessages - s.distinct;
      return {
        scenario: `6. SIGTERM during 1 s POSTs (max-in-flight 8, ${o.sigtermMessages} messages)`,
        figures: `exit code ${code} after ${stopMs} ms; after a restart lost ${lost}, duplicates ${s.dups}`,
        ok: code === 0 && lost === 0 && s.dups === 0,
      };
    } finally {
      await again.stop();
    }
  });
}

export async function runChaos(o: ChaosOptions): Promise<Row[]> {
  const scenarios: Array<[number, () => Promise<Row>]> = [
    [1, () => killNine(o)],
    [2, () => redisRestart(o)],
    [3, () => outage(o)],
    [4, () => failover(o)],
    [5, () => tornLines()],
    [6, () => sigterm(o)],
  ];
  const rows: Row[] = [];
  for (const [n, run] of scenarios) {
    if (o.only.length > 0 && !o.only.includes(n)) continue;
    try {
      rows.push(await run());
    } catch (err) {
      rows.push({ scenario: `${n}. (failed to run)`, figures: String(err), ok: false });
    }
  }
  return rows;
}

export function table(rows: Row[]): string {
  const lines = ['| scenario | figures | ok |', '|---|---|---|'];
  for (const r of rows) lines.push(`| ${r.scenario} | ${r.figures} | ${r.ok ? 'yes' : 'NO'} |`);
  return lines.join('\n') + '\n';
}

async function main(): Promise<void> {
  setLogLevel('warn');
  const n = (name: string, def: number) => Number(process.env[name] ?? def);
  const rows = await runChaos({
    messages: n('CHAOS_MESSAGES', 100_000),
    kills: n('CHAOS_KILLS', 10),
    maxInFlight: n('CHAOS_IN_FLIGHT', 16),
    outageSeconds: n('CHAOS_OUTAGE_SECONDS', 30),
    redisMessages: n('CHAOS_REDIS_MESSAGES', 10_000),
    failoverMessages: n('CHAOS_FAILOVER_MESSAGES', 5_000),
    outageMessages: n('CHAOS_OUTAGE_MESSAGES', 500),
    sigtermMessages: n('CHAOS_SIGTERM_MESSAGES', 40),
    only: (process.env.CHAOS_ONLY ?? '').split(',').filter(Boolean).map(Number),
  });
  process.stdout.write(table(rows));
  process.exit(rows.every((r) => r.ok) ? 0 : 1);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err: unknown) => {
    process.stderr.write(`chaos failed: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  });
}
