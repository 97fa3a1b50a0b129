/**
 * `rate-limit` (CONTRACT §12): two exporter processes of one site on one Redis, each with the
 * exporter's 50/s and burst 10, share the bucket: the receiver (a real HTTP server on port 0)
 * never sees more than 50 a second plus the burst. The embedded bus keeps the bucket in memory.
 * Bounds are checked on the receiver's arrival times, which differ from the times Redis granted
 * the tokens by the POSTs' own delays on a loaded machine: a slack of 5 in a one-second window.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openEnv, spawnExporterProc } from '../helpers/exporter-proc.js';
import { startWebhookServer } from '../helpers/webhook-server.js';
import { openEmbeddedBus } from '../../src/bus/embedded-bus.js';
import { startApi } from '../helpers/api.js';
import { freshRedisDb } from '../helpers/redis.js';
import { sleep } from '../helpers/wait.js';

test('two processes at 50/s burst 10: the receiver sees at most 50 a second plus the burst', async () => {
  const url = await freshRedisDb(12);
  const env = await openEnv(url);
  const hook = await startWebhookServer();
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
    await env.close();
    await hook.close();
  }
  const times = hook.requests.map((r) => r.time).sort((x, y) => x - y);
  // Every window of one second from an arrival holds at most 50 + 10 (+5 for the POSTs' jitter).
  let worst = 0;
  for (let i = 0, j = 0; i < times.length; i++) {
    while (times[j]! < times[i]! - 999) j++;
    worst = Math.max(worst, i - j + 1);
  }
  assert.ok(worst <= 65, `at most 65 in any second, saw ${worst}`);
  const span = (times.at(-1)! - times[0]!) / 1000;
  assert.ok(times.length <= 50 * span + 10 + 5, `${times.length} requests in ${span.toFixed(2)} s`);
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
