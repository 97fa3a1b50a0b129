/**
 * `ordering-key` (CONTRACT §12) through real Redis and a real HTTP receiver on port 0: equal
 * keys are delivered one at a time in topic order (also across failures and retries), different
 * keys go in parallel up to max-in-flight, and a hot key does not hold the other keys back.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openEnv, fakeClock, type Env } from '../helpers/exporter-proc.js';
import { startWebhookServer, type WebhookServer } from '../helpers/webhook-server.js';
import type { Runtime } from '../../src/exporter/runtime.js';
import { startApi } from '../helpers/api.js';
import { freshRedisDb } from '../helpers/redis.js';

let env: Env;
let hook: WebhookServer;
let rt: Runtime;

test.before(async () => {
  env = await openEnv(await freshRedisDb(11));
  hook = await startWebhookServer();
  rt = await env.start({ clock: fakeClock() });
});
test.after(async () => {
  await env.close();
  await hook.close();
});

const cfg = {
  'data-format': 'json',
  data: '${MSG_PAYLOAD}',
  'max-in-flight': 8,
  variables: [{ name: 'K', 'value-from-message': { 'json-pointer': '/payload/k' } }],
  'ordering-key': 'device-${K}',
};

test('equal keys one at a time in topic order, failures included; keys in parallel', async () => {
  const active = new Map<string, number>();
  let overlapSameKey = 0;
  let busiest = 0;
  let running = 0;
  hook.script((n, req) => {
    const { k } = JSON.parse(req.body) as { k: string };
    const now = (active.get(k) ?? 0) + 1;
    active.set(k, now);
    if (now > 1) overlapSameKey++;
    running++;
    busiest = Math.max(busiest, running);
    setTimeout(() => {
      active.set(k, (active.get(k) ?? 1) - 1);
      running--;
    }, 20);
    // Every seventh request fails once: its key waits for the retry, the others go on.
    return n % 7 === 3 ? { status: 503, delayMs: 20 } : { delayMs: 20 };
  });
  const { topic, name } = await env.exporter(rt, hook.url, cfg);
  const keys = ['a', 'b', 'c', 'd'];
  for (let i = 0; i < 40; i++) await env.produce(topic, JSON.stringify({ k: keys[i % 4], i }));
  await env.state(rt, name, (s) => s.delivered === 40, 'all 40 delivered');
  assert.is(overlapSameKey, 0, 'never two POSTs of one key at once');
  assert.ok(busiest > 1, `keys in parallel (at most ${busiest} at once)`);
  for (const k of keys) {
    const order = hook
      .delivered()
      .filter((r) => r.path === `/${name}`)
      .map((r) => JSON.parse(r.body) as { k: string; i: number })
      .filter((m) => m.k === k)
      .map((m) => m.i);
    assert.equal(
      order,
      [...order].sort((x, y) => x - y),
      `key ${k} in topic order`,
    );
    assert.is(order.length, 10);
  }
  hook.script([]);
});

test('a hot key does not hold other keys back: its waiting messages take no slot', async () => {
  hook.script((_, req) => ((JSON.parse(req.body) as { k: string }).k === 'hot' ? { delayMs: 40 } : {}));
  const { topic, name } = await env.exporter(rt, hook.url, { ...cfg, 'max-in-flight': 2 });
  for (let i = 0; i < 20; i++) await env.produce(topic, JSON.stringify({ k: 'hot', i }));
  for (let i = 0; i < 5; i++) await env.produce(topic, JSON.stringify({ k: `cold-${i}`, i }));
  await env.state(rt, name, (s) => s.delivered === 25, 'all delivered');
  const bodies = hook
    .delivered()
    .filter((r) => r.path === `/${name}`)
    .map((r) => JSON.parse(r.body) as { k: string });
  const lastCold = bodies.map((b) => b.k.startsWith('cold')).lastIndexOf(true);
  assert.ok(lastCold < 19, `the cold keys were not queued behind the 20 hot messages (last at ${lastCold})`);
  hook.script([]);
});

test('ordering-key is validated when written', async () => {
  const api = await startApi('embedded');
  try {
    const base = { topics: ['t1'], 'site-placement': { 'all-sites': true }, url: 'http://127.0.0.1:9/x', data: 'x' };
    const bad = await api.json('PUT', '/v1/config/volga/webhooks/o1', {
      body: { name: 'o1', ...base, 'ordering-key': '${UNDECLARED}' },
    });
    assert.is(bad.status, 400);
    assert.ok(JSON.stringify(bad.body).includes('ordering-key'), JSON.stringify(bad.body));
    const ok = await api.json('PUT', '/v1/config/volga/webhooks/o1', {
      body: { name: 'o1', ...base, 'ordering-key': '${MSG_PAYLOAD}' },
    });
    assert.is(ok.status, 201, JSON.stringify(ok.body));
  } finally {
    await api.close();
  }
});

test.run();
