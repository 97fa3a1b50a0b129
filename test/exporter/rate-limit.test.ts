/**
 * `rate-limit` (CONTRACT §12): two exporter processes of one site on one Redis, each with the
 * exporter's 50/s and burst 10, share the bucket: at most 50 tokens a second plus the burst are
 * granted. Checked without timing: `MONITOR` records every call of the limiter's script as the
 * state it writes (`HSET <bucket> tokens T ts NOW`, NOW being Redis's own clock at the call),
 * and the test replays the calls: each recorded state must be what a correct bucket computes
 * from the state before it (one token taken, or none when less than one was there), the
 * grants counted that way must be exactly the POSTs the receiver got (one token per attempt),
 * and any second of Redis time must hold at most 60 grants. The POSTs' own delays on a loaded
 * machine play no part. The embedded bus keeps the bucket in memory.
 */
import { connect } from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openEnv, spawnExporterProc } from '../helpers/exporter-proc.js';
import { startWebhookServer } from '../helpers/webhook-server.js';
import { openEmbeddedBus } from '../../src/bus/embedded-bus.js';
import { RateLimit } from '../../src/exporter/rate-limit.js';
import { systemClock } from '../../src/lib/clock.js';
import { startApi } from '../helpers/api.js';
import { freshRedisDb } from '../helpers/redis.js';
import { sleep } from '../helpers/wait.js';

/** A `MONITOR` connection to the server of `url`: every command it runs, as MONITOR prints them. */
async function monitor(url: string): Promise<{ lines: string[]; close(): void }> {
  const u = new URL(url);
  const sock = connect(Number(u.port), u.hostname);
  const lines: string[] = [];
  let rest = '';
  let ready: () => void = () => {};
  const ok = new Promise<void>((resolve) => (ready = resolve));
  sock.setEncoding('utf8');
  sock.on('data', (d: string) => {
    const parts = (rest + d).split('\r\n');
    rest = parts.pop()!;
    for (const p of parts)
      if (p === '+OK') ready();
      else if (p.startsWith('+')) lines.push(p.slice(1));
  });
  sock.write('MONITOR\r\n');
  await ok;
  return { lines, close: () => sock.destroy() };
}

type Call = { tokens: number; ts: number };

/** The limiter's calls on `bucket`, in the order Redis ran them: the state each one wrote. */
function bucketCalls(lines: string[], bucket: string): Call[] {
  const calls: Call[] = [];
  for (const l of lines) {
    // 1764300000.123456 [12 lua] "HSET" "edgeplane:rate:…" "tokens" "9.5" "ts" "1764300000123"
    if (!l.includes(' lua] "HSET" ') || !l.includes(`"${bucket}"`)) continue;
    const args = [...l.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((m) => m[1]!);
    calls.push({ tokens: Number(args[args.indexOf('tokens') + 1]), ts: Number(args[args.indexOf('ts') + 1]) });
  }
  return calls;
}

/**
 * Replays the recorded states through a correct token bucket: the grants (their Redis times),
 * and the calls whose recorded state a correct bucket would not have written.
 */
function replay(calls: Call[], perSecond: number, burst: number): { grants: number[]; wrong: string[] } {
  const grants: number[] = [];
  const wrong: string[] = [];
  let prev: Call | undefined;
  for (const [i, c] of calls.entries()) {
    // As the script computes it (the stored tokens as read back, Redis's ms clock); an absent
    // or expired bucket is full, as is any bucket idle long enough to have expired.
    const refilled = prev ? Math.min(burst, prev.tokens + (Math.max(0, c.ts - prev.ts) * perSecond) / 1000) : burst;
    const granted = refilled >= 1;
    const expected = granted ? refilled - 1 : refilled;
    if (Math.abs(expected - c.tokens) > 1e-9) wrong.push(`call ${i}: ${refilled} tokens, wrote ${c.tokens}`);
    if (granted) grants.push(c.ts);
    prev = c;
  }
  return { grants, wrong };
}

/** The most grants in any window of `ms` (inclusive of its first, exclusive of `ms` later). */
function mostInWindow(times: number[], ms: number): number {
  let worst = 0;
  for (let i = 0, j = 0; i < times.length; i++) {
    while (times[i]! - times[j]! >= ms) j++;
    worst = Math.max(worst, i - j + 1);
  }
  return worst;
}

test('two processes at 50/s burst 10: at most 50 tokens a second plus the burst, replayed from Redis', async () => {
  const url = await freshRedisDb(12);
  const env = await openEnv(url);
  const hook = await startWebhookServer();
  const mon = await monitor(url);
  const total = 300;
  await env.webhook({
    name: 'limited',
    topics: ['rl-t'],
    'start-position': 'beginning',
    'max-in-flight': 16,
    'rate-limit': { 'per-second': 50, burst: 10 },
    'site-placement': { 'all-sites': true },
    url: `${hook.url}/rl`,
    data: '${MSG_PAYLOAD}',
  });
  const a = await spawnExporterProc(url, 'rl-site');
  const b = await spawnExporterProc(url, 'rl-site');
  try {
    // Produced while both run, in bursts, so both processes' readers take messages.
    for (let i = 0; i < total; i++) {
      await env.produce('rl-t', `m${i}`);
      if (i % 30 === 29) await sleep(200);
    }
    await hook.waitFor(() => new Set(hook.delivered().map((r) => r.body)).size === total, 'all delivered', 60_000);
    // Both processes took part (the consumer group split the topic between them).
    const consumers = (await env.bus.groupConsumers('rl-t', 'edgeplane:default:limited')).length;
    assert.ok(consumers >= 2, `${consumers} consumers`);
  } finally {
    await a.stop();
    await b.stop();
    mon.close();
    await env.close();
    await hook.close();
  }
  const buckets = new Set(mon.lines.flatMap((l) => /"(edgeplane:rate:[^"]*)"/.exec(l)?.[1] ?? []));
  assert.is(buckets.size, 1, `one bucket for the site's two processes: ${[...buckets].join(', ')}`);
  const calls = bucketCalls(mon.lines, [...buckets][0]!);
  const { grants, wrong } = replay(calls, 50, 10);
  assert.equal(wrong.slice(0, 5), [], 'every recorded state is what a correct bucket writes');
  // One token per attempt, and the receiver answers every POST 200: as many POSTs as grants.
  assert.is(hook.requests.length, grants.length, `${calls.length} calls, ${grants.length} grants`);
  assert.ok(calls.length > grants.length, 'the limit held messages back (some calls had to wait)');
  const worst = mostInWindow(grants, 1000);
  assert.ok(worst <= 60, `at most 50 + 10 grants in any second of Redis time, saw ${worst}`);
});

test('embedded bus: the bucket in memory gives the burst at once, then one token per 1/rate', async () => {
  const bus = openEmbeddedBus(undefined);
  const waits: number[] = [];
  for (let i = 0; i < 6; i++) waits.push(await bus.rateToken('x', 'local', 10, 5));
  assert.equal(waits.slice(0, 5), [0, 0, 0, 0, 0]);
  assert.ok(waits[5]! > 0 && waits[5]! <= 100, `then a wait of at most 100 ms, got ${waits[5]}`);
  assert.is(await bus.rateToken('other', 'local', 10, 5), 0, 'each exporter its own bucket');
  await bus.close();
});

test('an attempt waiting for a token says when it goes (next-attempt-time), once per wait', async () => {
  const bus = openEmbeddedBus(undefined);
  const rate = new RateLimit(bus, 'y', 'local', 20, 1, systemClock);
  const never = new AbortController().signal;
  const told: number[] = [];
  assert.ok(await rate.take(never, (until) => told.push(until)));
  assert.equal(told, [], 'the burst: no wait');
  const before = Date.now();
  assert.ok(await rate.take(never, (until) => told.push(until)));
  assert.is(told.length, 1, 'one wait, told once');
  assert.ok(told[0]! > before, 'a time to come');
  await bus.close();
});

test('rate-limit is validated when written', async () => {
  const api = await startApi('embedded');
  try {
    const base = { topics: ['t1'], 'site-placement': { 'all-sites': true }, url: 'http://127.0.0.1:9/x', data: 'x' };
    for (const rl of [{ 'per-second': 0 }, { burst: 5 }, { 'per-second': 5, burst: 0 }, { 'per-second': 'fast' }]) {
      const r = await api.json('PUT', '/v1/config/volga/webhooks/r1', {
        body: { name: 'r1', ...base, 'rate-limit': rl },
      });
      assert.is(r.status, 400, JSON.stringify(rl));
      assert.ok(JSON.stringify(r.body).includes('rate-limit'), JSON.stringify(r.body));
    }
    const ok = await api.json('PUT', '/v1/config/volga/webhooks/r1', {
      body: { name: 'r1', ...base, 'rate-limit': { 'per-second': 2.5, burst: 3 } },
    });
    assert.is(ok.status, 201, JSON.stringify(ok.body));
  } finally {
    await api.close();
  }
});

test.run();
