/**
 * `npm run bench:exporter` (issue "Measure"). Starts its own redis-server and a webhook sink in
 * a child process, then:
 * 1. 100,000 messages of ~200 bytes pre-filled in a stream (pipelined XADD); one exporter with
 *    two filters and a three-variable JSON data template delivers them all, at max-in-flight
 *    1 and 64, each beside a bare floor in the same run (XREAD COUNT batches + one undici
 *    POST per message, no filtering, same in-flight bound). Prints messages/s and the ratio
 *    (goal ≥ 0.9).
 * 2. 1,000 exporters over 100 idle topics: RSS, CPU % over 30 s, Redis connections
 *    (goals ≤ 300 MB, < 5 %, ≤ 8).
 * Each setting alternates floor and exporter BENCH_ROUNDS times (default 3) and keeps the best
 * of each; it also prints the CPU time per message of this process, Redis and the sink in
 * those runs. BENCH_MESSAGES, BENCH_IN_FLIGHT (default "1,64") and BENCH_IDLE_SECONDS shorten a
 * run. Every loop is bounded.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createClient } from 'redis';
import { Agent, request } from 'undici';
import { openRedisBus } from '../src/bus/redis-bus.js';
import { startRuntime, type Runtime } from '../src/exporter/index.js';
import { setLogLevel } from '../src/log.js';
import { exporterSamples } from '../src/ops/exporter-source.js';
import { createMetrics } from '../src/ops/metrics.js';
import { configKey } from '../src/model/keys.js';
import { openRedisStore } from '../src/store/redis.js';
import type { Store } from '../src/store/store.js';
import { startRedis } from '../test/helpers/redis.js';

const messages = Number(process.env.BENCH_MESSAGES ?? 100_000);
const idleSeconds = Number(process.env.BENCH_IDLE_SECONDS ?? 30);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const inFlightSettings = (process.env.BENCH_IN_FLIGHT ?? '1,64').split(',').map(Number);
const topic = 'bench';

const sinkCode = `
const http = require('node:http');
let n = 0;
const srv = http.createServer((req, res) => { req.on('data', () => {}); req.on('end', () => { n++; res.writeHead(200); res.end(); }); });
srv.keepAliveTimeout = 60000;
srv.listen(0, '127.0.0.1', () => process.stdout.write('PORT ' + srv.address().port + '\\n'));
`;

async function startSink(): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, ['-e', sinkCode], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve) => {
    child.stdout!.on('data', (d: Buffer) => {
      const m = /PORT (\d+)/.exec(d.toString());
      if (m) resolve(Number(m[1]));
    });
  });
  return { url: `http://127.0.0.1:${port}`, child };
}

function payload(i: number): string {
  const base = JSON.stringify({
    temp: 15 + (i % 20),
    level: 'info',
    sensor: `sensor-${String(i % 1000).padStart(5, '0')}`,
    seq: i,
  });
  return base.slice(0, -1) + `,"pad":"${'x'.repeat(Math.max(0, 190 - base.length))}"}`;
}

async function prefill(url: string): Promise<void> {
  const c = createClient({ url });
  await c.connect();
  for (let i = 0; i < messages; i += 1000) {
    const batch = [];
    // Sent together: node-redis pipelines concurrent commands on one connection.
    for (let j = i; j < Math.min(messages, i + 1000); j++)
      batch.push(c.sendCommand(['XADD', `volga:${topic}`, '*', 'payload', payload(j), 'producer-name', 'bench']));
    await Promise.all(batch);
  }
  await c.close();
}

/** The floor: what any exporter must do at least — read batches and POST each message. */
async function floor(url: string, sink: string, inFlight: number): Promise<number> {
  const c = createClient({ url });
  await c.connect();
  const agent = new Agent({ connections: 128 });
  const started = performance.now();
  let last = '0';
  let done = 0;
  let running = 0;
  let freed: (() => void) | undefined;
  const post = async (body: string) => {
    running++;
    try {
      const res = await request(sink, {
        method: 'POST',
        body,
        dispatcher: agent,
        headers: { 'content-type': 'application/json' },
      });
      await res.body.dump();
      done++;
    } finally {
      running--;
      freed?.();
    }
  };
  for (let guard = 0; done + running < messages && guard < messages; guard++) {
    const raw = await c.sendCommand(['XREAD', 'COUNT', '500', 'STREAMS', `volga:${topic}`, last]);
    const entries =
      Array.isArray(raw) && Array.isArray(raw[0]) && Array.isArray(raw[0][1]) ? (raw[0][1] as unknown[]) : [];
    if (entries.length === 0) break;
    for (const e of entries) {
      if (!Array.isArray(e)) continue;
      last = String(e[0]);
      const fields = e[1] as unknown[];
      while (running >= inFlight)
        await new Promise<void>((r) => {
          freed = r;
        });
      void post(String(fields[1]));
    }
  }
  while (running > 0)
    await new Promise<void>((r) => {
      freed = r;
    });
  const rate = done / ((performance.now() - started) / 1000);
  await agent.close();
  await c.close();
  return rate;
}

async function exporterRun(store: Store, rt: Runtime, sink: string, inFlight: number, name: string): Promise<number> {
  await store.commit([
    {
      op: 'put',
      key: configKey('default', `volga/webhooks/${name}`),
      value: {
        name,
        topics: [topic],
        'start-position': 'beginning',
        'site-placement': { 'all-sites': true },
        'max-in-flight': inFlight,
        url: `${sink}/${name}`,
        'data-format': 'json',
        'match-string': ['"temp"'],
        'no-match-re': ['"level":"debug"'],
        variables: [{ name: 'TEMP', 'value-from-message': { 'json-pointer': '/payload/temp' } }],
        data: '{"site":"${SYS_SITE}","id":"${MSG_SEQNO}","temp":${TEMP}}',
      },
    },
  ]);
  let started = 0;
  // Polled every 10 ms: the start (first seen ready) and the end are each known within that.
  for (let i = 0; i < 30_000; i++) {
    const s = rt.exporterState('default', name);
    if (!started && s?.status === 'ready') started = performance.now();
    if (s && Number(s.delivered) + Number(s.dropped) + Number(s.ignored) + Number(s.filtered) >= messages) {
      if (Number(s.delivered) !== messages) process.stdout.write(`  warning: ${JSON.stringify(s)}\n`);
      return messages / ((performance.now() - started) / 1000);
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`exporter ${name} did not finish within 300 s`);
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

/** CPU time (user + system) a process has used so far, in µs (Linux /proc; clock ticks of 10 ms). */
function cpuMicros(pid: number): number {
  const fields = (readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1] ?? '').split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

type Cpu = { self: number; redis: number; sink: number };

/** Runs `fn` and returns its result with the CPU µs per message spent by this process, Redis and the sink. */
async function withCpu(
  pids: { redis: number; sink: number },
  fn: () => Promise<number>,
): Promise<{ rate: number; cpu: Cpu }> {
  const self0 = process.cpuUsage();
  const redis0 = cpuMicros(pids.redis);
  const sink0 = cpuMicros(pids.sink);
  const rate = await fn();
  const self = process.cpuUsage(self0);
  return {
    rate,
    cpu: {
      self: (self.user + self.system) / messages,
      redis: (cpuMicros(pids.redis) - redis0) / messages,
      sink: (cpuMicros(pids.sink) - sink0) / messages,
    },
  };
}

const cpuText = (c: Cpu): string =>
  `${c.self.toFixed(1)} + Redis ${c.redis.toFixed(1)} + sink ${c.sink.toFixed(1)} µs/msg`;

async function main(): Promise<void> {
  setLogLevel('warn');
  const redis = await startRedis();
  const sink = await startSink();
  try {
    process.stdout.write(`pre-filling ${messages} messages of ~200 bytes...\n`);
    await prefill(redis.url);
    const store = await openRedisStore(redis.url);
    const bus = await openRedisBus(redis.url);
    // As the product runs: delivery latencies observed, and /metrics scraped every second
    // (15 times Prometheus's default rate) while messages flow.
    const metrics = createMetrics();
    const rt = await startRuntime({
      settings: { site: 'bench', globalDomain: 'g' },
      store,
      bus,
      deliveryObserver: metrics.deliveryObserver,
    });
    metrics.exporters(() => exporterSamples(rt));
    const scraper = setInterval(() => void metrics.registry.metrics(), 1000);
    const info = await (async () => {
      const c = createClient({ url: redis.url });
      await c.connect();
      const i = String(await c.sendCommand(['INFO', 'server']));
      await c.close();
      return i;
    })();
    const pids = { redis: Number(/process_id:(\d+)/.exec(info)?.[1]), sink: sink.child.pid ?? 0 };
    for (const n of inFlightSettings) {
      // Alternated, best of each: the load of a shared machine drifts between runs.
      let bare: { rate: number; cpu: Cpu } | undefined;
      let ours: { rate: number; cpu: Cpu } | undefined;
      for (let round = 1; round <= rounds; round++) {
        const b = await withCpu(pids, () => floor(redis.url, sink.url, n));
        if (!bare || b.rate > bare.rate) bare = b;
        const o = await withCpu(pids, () => exporterRun(store, rt, sink.url, n, `bench-${n}-${round}`));
        if (!ours || o.rate > ours.rate) ours = o;
      }
      if (!bare || !ours) throw new Error('no round ran');
      process.stdout.write(
        `max-in-flight ${n}: exporter ${ours.rate.toFixed(0)} msg/s, floor ${bare.rate.toFixed(0)} msg/s, ratio ${(ours.rate / bare.rate).toFixed(2)} (goal ≥ 0.9)\n`,
      );
      process.stdout.write(`  CPU of the best runs: exporter ${cpuText(ours.cpu)}; floor ${cpuText(bare.cpu)}\n`);
    }
    clearInterval(scraper);
    await rt.stop(1000);
    await bus.close();
    const idleStore = await openRedisStore(redis.url);
    await store.close();
    await idleRun(redis.url, idleStore);
    await idleStore.close();
  } finally {
    sink.child.kill();
    await redis.stop();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  },
);
