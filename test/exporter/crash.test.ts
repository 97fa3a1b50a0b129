/**
 * Failures mid-stream: the runtime in a child process is killed with SIGKILL and started
 * again (every message delivered at least once, none skipped, order kept with
 * max-in-flight 1), and Redis itself is restarted under a running runtime (delivery resumes).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openEnv, spawnExporterProc } from '../helpers/exporter-proc.js';
import { startWebhookServer } from '../helpers/webhook-server.js';
import { startRedis, freshRedisDb } from '../helpers/redis.js';
import { eventually } from '../helpers/wait.js';
import { webhookStateKey } from '../../src/store/keys.js';

const total = 150;

test('kill -9 mid-stream, then a restart: all delivered at least once, none skipped, in order', async () => {
  const url = await freshRedisDb(5);
  const env = await openEnv(url);
  // Slow replies so the kill lands while messages are still queued.
  const hook = await startWebhookServer();
  hook.script(() => ({ delayMs: 10 }));
  await env.webhook({
    name: 'crash',
    topics: ['crash-t'],
    'start-position': 'beginning',
    'site-placement': { 'all-sites': true },
    url: `${hook.url}/c`,
    data: '${MSG_PAYLOAD}',
  });
  for (let i = 0; i < total; i++) await env.produce('crash-t', `m${i}`);

  const first = await spawnExporterProc(url, 'crash-site');
  await hook.waitFor((r) => r.length >= 30, '30 deliveries before the kill');
  await first.kill9();
  const atKill = hook.delivered().length;
  assert.ok(atKill < total, 'the kill happened mid-stream');

  const second = await spawnExporterProc(url, 'crash-site');
  await hook.waitFor(
    () => new Set(hook.delivered().map((r) => r.body)).size === total,
    'every message delivered',
    60_000,
  );
  await second.stop();

  const bodies = hook.delivered().map((r) => r.body);
  const firstSeen = bodies.filter((b, i) => bodies.indexOf(b) === i);
  assert.equal(
    firstSeen,
    Array.from({ length: total }, (_, i) => `m${i}`),
    'topic order, nothing skipped',
  );
  // Only what was in flight at the kill (max-in-flight 1) may come twice.
  assert.ok(bodies.length - total <= 1, `at most one duplicate, got ${bodies.length - total}`);
  await env.close();
  await hook.close();
});

test('kill -9 at 16 in flight, twice: delivered equals the distinct messages the webhook acknowledged', async () => {
  const url = await freshRedisDb(4);
  const env = await openEnv(url);
  const hook = await startWebhookServer();
  hook.script(() => ({ delayMs: 5 }));
  const n = 400;
  await env.webhook({
    name: 'exact',
    topics: ['exact-t'],
    'start-position': 'beginning',
    'max-in-flight': 16,
    'site-placement': { 'all-sites': true },
    url: `${hook.url}/e`,
    data: '${MSG_PAYLOAD}',
  });
  for (let i = 0; i < n; i++) await env.produce('exact-t', `e${i}`);
  const distinct = () => new Set(hook.delivered().map((r) => r.body)).size;
  for (const at of [80, 200]) {
    const proc = await spawnExporterProc(url, 'exact-site');
    await hook.waitFor(() => distinct() >= at, `${at} acknowledged before the kill`);
    await proc.kill9();
  }
  assert.ok(distinct() < n, 'the kills happened mid-stream');
  const last = await spawnExporterProc(url, 'exact-site');
  await hook.waitFor(() => distinct() === n, 'every message acknowledged', 60_000);
  await last.stop();
  const bodies = hook.delivered().map((r) => r.body);
  // Re-sent after each kill: at most what was in flight then.
  assert.ok(bodies.length - n <= 2 * 16, `at most 16 duplicates per kill, got ${bodies.length - n}`);
  const raw = await env.store.kvGet(webhookStateKey('default', 'exact', 'exact-site'));
  const state = JSON.parse(raw ?? '{}') as { delivered?: number };
  assert.is(state.delivered, n, `delivered ${state.delivered} = ${n} distinct (${bodies.length} POSTs answered 2xx)`);
  const counts = await env.bus.counts('exact-t', 'edgeplane:default:exact|exact-site');
  assert.is(counts.delivered, n, 'the count kept in Redis beside the stream');
  await env.close();
  await hook.close();
});

test('Redis restarted mid-stream: the runtime reconnects and delivery resumes', async () => {
  const redis = await startRedis({ persist: true });
  const env = await openEnv(redis.url);
  const hook = await startWebhookServer();
  hook.script(() => ({ delayMs: 5 }));
  await env.webhook({
    name: 'rr',
    topics: ['rr-t'],
    'site-placement': { 'all-sites': true },
    url: `${hook.url}/r`,
    data: '${MSG_PAYLOAD}',
  });
  const rt = await env.start({ site: 'rr-site' });
  await env.state(rt, 'rr', (s) => s.status === 'ready', 'ready');
  for (let i = 0; i < 60; i++) await env.produce('rr-t', `a${i}`);
  await hook.waitFor((r) => r.length >= 10, 'some deliveries');
  await redis.restart();
  for (let i = 0; i < 40; i++) await env.produce('rr-t', `b${i}`);
  await hook.waitFor(() => new Set(hook.delivered().map((r) => r.body)).size === 100, 'all 100 delivered', 60_000);
  const s = await eventually(() => {
    const x = rt.exporterState('default', 'rr');
    // The receiver counts a delivery when it answers, the exporter a moment later.
    return x && x.status === 'ready' && Number(x.delivered) >= 100 ? x : undefined;
  }, 'ready with every delivery counted');
  assert.ok(Number(s.delivered) >= 100);
  await env.close();
  await hook.close();
  await redis.stop();
});

test('a consumer group destroyed under a running exporter is recreated after the last handled message', async () => {
  const url = await freshRedisDb(6);
  const env = await openEnv(url);
  const hook = await startWebhookServer();
  await env.webhook({
    name: 'ng',
    topics: ['ng-t'],
    'site-placement': { 'all-sites': true },
    url: `${hook.url}/n`,
    data: '${MSG_PAYLOAD}',
  });
  const rt = await env.start({ site: 'ng-site' });
  await env.state(rt, 'ng', (s) => s.status === 'ready', 'ready');
  for (let i = 0; i < 5; i++) await env.produce('ng-t', `x${i}`);
  await hook.waitFor(() => hook.delivered().length === 5, 'first five');
  await env.bus.destroyGroup('ng-t', 'edgeplane:default:ng');
  for (let i = 5; i < 10; i++) await env.produce('ng-t', `x${i}`);
  await hook.waitFor(() => new Set(hook.delivered().map((r) => r.body)).size === 10, 'all ten');
  assert.equal(
    hook.delivered().map((r) => r.body),
    Array.from({ length: 10 }, (_, i) => `x${i}`),
  );
  await env.close();
  await hook.close();
});

test.run();
