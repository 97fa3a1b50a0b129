/**
 * Exporter state beyond one process: counters go on after a restart, each site keeps its own
 * state of an exporter on a shared Redis, and failed attempts are logged (first at once,
 * then at most one line a second, on an injected clock) with the start of the response body.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openEnv, type Env } from '../helpers/exporter-proc.js';
import { startWebhookServer, type WebhookServer } from '../helpers/webhook-server.js';
import { webhookStateKey } from '../../src/store/keys.js';
import { ExporterState } from '../../src/exporter/state.js';
import { freshRedisDb } from '../helpers/redis.js';
import { eventually } from '../helpers/wait.js';
import { logsOf } from '../helpers/logs.js';

let env: Env;
let hook: WebhookServer;

test.before(async () => {
  env = await openEnv(await freshRedisDb(7));
  hook = await startWebhookServer();
});
test.after(async () => {
  await env.close();
  await hook.close();
});

test('failed attempts: the first logged at once, then one summary line a second; status changes logged', async () => {
  const s = new ExporterState(0, { tenant: 'default', exporter: 'x' });
  s.setStatus('ready');
  const fail = (attempt: number) => ({ topic: 't', id: '1-0', attempt, error: 'HTTP 503', status: 503, body: 'busy' });
  const lines = await logsOf(() => {
    s.attemptFailed(fail(1), 10_000, true);
    for (let i = 2; i <= 10; i++) s.attemptFailed(fail(i), 10_000 + (i - 1) * 100, false);
    s.attemptFailed(fail(11), 11_100, false);
    s.attemptFailed(fail(12), 11_200, false);
    s.retryEnded();
  });
  const failures = lines.filter((l) => String(l.msg).startsWith('exporter: POST attempt'));
  assert.equal(
    failures.map((l) => l['not-logged-since'] ?? l['failed-attempts'] ?? 0),
    [0, 9, 1],
  );
  assert.is(failures[0]!.body, 'busy');
  assert.is(failures[0]!.status, 503);
  const changes = lines.filter((l) => l.msg === 'exporter status changed').map((l) => `${l.from}>${l.to}`);
  assert.equal(changes, ['ready>retrying', 'retrying>ready']);
  assert.is(s.status, 'ready');
  assert.is(s.counters['failed-attempts'], 12);
});

test('a retry given up at a stop is no recovery: retrying goes to stopped, never ready between', async () => {
  const s = new ExporterState(0, { tenant: 'default', exporter: 'x' });
  s.setStatus('ready');
  const lines = await logsOf(() => {
    s.attemptFailed({ topic: 't', id: '1-0', attempt: 1, error: 'HTTP 500', status: 500 }, 1000, true);
    s.retryEnded(2000, false);
    s.setStatus('stopped', 2000);
  });
  const changes = lines.filter((l) => l.msg === 'exporter status changed').map((l) => `${l.from}>${l.to}`);
  assert.equal(changes, ['ready>retrying', 'retrying>stopped']);
});

test('a failing POST is logged at once with the first 200 bytes of the response body', async () => {
  hook.script((_n, req) => (req.path === '/body' ? { status: 502, body: 'x'.repeat(300) } : {}));
  await env.webhook({
    name: 'body',
    topics: ['body-t'],
    'site-placement': { 'all-sites': true },
    url: `${hook.url}/body`,
    data: '${MSG_PAYLOAD}',
    tries: 1,
  });
  const rt = await env.start({ site: 'log-site' });
  await env.state(rt, 'body', (s) => s.status === 'ready');
  const lines = await logsOf(async () => {
    await env.produce('body-t', 'm');
    await env.state(rt, 'body', (s) => s.dropped === 1);
  });
  const line = lines.find((l) => l.msg === 'exporter: POST attempt failed');
  assert.ok(line, 'logged');
  assert.is(line!.status, 502);
  assert.is(line!.body, 'x'.repeat(200));
  hook.script([]);
  await rt.stop(1000);
});

test('counters survive a restart of the process; each site keeps its own state', async () => {
  await env.webhook({
    name: 'keep',
    topics: ['keep-t'],
    'site-placement': { 'all-sites': true },
    url: `${hook.url}/keep`,
    data: '${MSG_PAYLOAD}',
  });
  const a = await env.start({ site: 'site-a', publishMs: 50 });
  const b = await env.start({ site: 'site-b', publishMs: 50 });
  await env.state(a, 'keep', (s) => s.status === 'ready');
  await env.state(b, 'keep', (s) => s.status === 'ready');
  for (let i = 0; i < 4; i++) await env.produce('keep-t', `k${i}`);
  await eventually(() => {
    const n =
      Number(a.exporterState('default', 'keep')?.delivered) + Number(b.exporterState('default', 'keep')?.delivered);
    return n === 4;
  }, 'four delivered between the sites');
  const aDelivered = Number(a.exporterState('default', 'keep')?.delivered);
  await eventually(async () => {
    const raw = await env.store.kvGet(webhookStateKey('default', 'keep', 'site-a'));
    const other = await env.store.kvGet(webhookStateKey('default', 'keep', 'site-b'));
    return raw && other && JSON.parse(raw).delivered === aDelivered && JSON.parse(raw).site === 'site-a';
  }, 'each site published its own state');
  await a.stop(1000);
  await b.stop(1000);

  const again = await env.start({ site: 'site-a', publishMs: 50 });
  await env.state(again, 'keep', (s) => s.status === 'ready' && s.delivered === aDelivered, 'counters kept');
  await again.stop(1000);
});

test.run();
