/**
 * Truthful retry state and values that cannot block a topic (CONTRACT §12), through real
 * Redis and a real HTTP receiver on port 0: `next-attempt-time` is in the future while a retry
 * waits and `failing-since` says when the trouble began (on a clock the test moves by hand,
 * so nothing sleeps); a `ready` exporter's last error is history with its time; a paused
 * exporter shows the backlog Redis holds; a header value with CR or LF is a 400 when static
 * and ignores its message (never retried, dead-lettered) when expanded; `retry-interval` is at
 * least 10ms.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openEnv, type Env } from '../helpers/exporter-proc.js';
import { startWebhookServer, type WebhookServer } from '../helpers/webhook-server.js';
import { startApi } from '../helpers/api.js';
import type { Clock, Runtime } from '../../src/exporter/runtime.js';
import type { JsonObject } from '../../src/lib/json.js';
import { lastErrorWords, retryWords } from '../../src/lib/exporter-words.js';
import { frame } from '../../src/cli/top.js';
import { freshRedisDb } from '../helpers/redis.js';
import { eventually } from '../helpers/wait.js';

/** A clock that moves only when the test says: sleeps end when `advance` passes their end. */
function manualClock(): Clock & { advance(ms: number): void; waiting(): number } {
  let now = Date.parse('2026-03-01T12:00:00Z');
  let sleeps: Array<{ until: number; done: () => void }> = [];
  return {
    now: () => now,
    sleep(ms, signal) {
      return new Promise<void>((resolve) => {
        if (signal?.aborted) return resolve();
        const entry = { until: now + ms, done: resolve };
        sleeps.push(entry);
        signal?.addEventListener('abort', () => resolve(), { once: true });
      });
    },
    advance(ms) {
      now += ms;
      const due = sleeps.filter((s) => s.until <= now);
      sleeps = sleeps.filter((s) => s.until > now);
      for (const s of due) s.done();
    },
    waiting: () => sleeps.length,
  };
}

let env: Env;
let hook: WebhookServer;
let rt: Runtime;
const clock = manualClock();

test.before(async () => {
  env = await openEnv(await freshRedisDb(9));
  hook = await startWebhookServer();
  rt = await env.start({ clock });
});
test.after(async () => {
  await env.close();
  await hook.close();
});

const requestsOf = (name: string) => hook.requests.filter((r) => r.path.startsWith(`/${name}`));

test('retrying: next-attempt-time in the future while a retry waits, failing-since; then ready, the error as history', async () => {
  let failures = 0;
  hook.script((_, req) => (req.body === 'r1' && ++failures <= 3 ? { status: 503 } : {}));
  const { topic, name } = await env.exporter(rt, hook.url, { 'retry-interval': '10s', 'max-retry-interval': '60s' });
  const failedAt = clock.now();
  await env.produce(topic, 'r1');
  for (let attempt = 1; attempt <= 3; attempt++) {
    const s = await env.state(
      rt,
      name,
      (x) => x['failed-attempts'] === attempt && x['next-attempt-time'] !== undefined,
      `attempt ${attempt} failed, a retry scheduled`,
    );
    assert.is(s.status, 'retrying');
    const next = Date.parse(String(s['next-attempt-time']));
    assert.ok(next > clock.now(), `next-attempt-time ${String(s['next-attempt-time'])} is in the future`);
    assert.is(s['failing-since'], new Date(failedAt).toISOString(), 'failing since the first failure');
    const words = retryWords(s, clock.now());
    assert.match(words, /^next retry in \d+ s, failing since 12:00:00 \(\d+ s\)$/);
    const table = frame([{ ...s, name }], new Map(), clock.now(), 400).text;
    assert.ok(table.includes('next retry in') && table.includes('failing since'), table);
    assert.ok(lastErrorWords(s, clock.now()).includes('HTTP 503'), 'the error is current while retrying');
    // Nothing is attempted before that time: the state keeps saying so.
    clock.advance(next - clock.now() - 1);
    assert.is(requestsOf(name).length, attempt);
    clock.advance(1);
  }
  const ready = await env.state(rt, name, (x) => x.delivered === 1, 'delivered at the fourth attempt');
  assert.is(ready.status, 'ready');
  assert.is(ready['next-attempt-time'], undefined, 'no retry pending');
  assert.is(ready['failing-since'], undefined);
  assert.ok(String(ready['last-error']).includes('HTTP 503'));
  const history = lastErrorWords(ready, clock.now() + 300_000);
  assert.match(history, /^at 12:\d\d:\d\d \(\d+ min ago\): POST to .* answered HTTP 503$/);
  hook.script([]);
});

test('a paused exporter shows the backlog Redis holds for it', async () => {
  const { topic, name } = await env.exporter(rt, hook.url);
  await env.webhook({
    name,
    topics: [topic],
    'site-placement': { 'all-sites': true },
    url: `${hook.url}/${name}`,
    data: '${MSG_PAYLOAD}',
    enabled: false,
  });
  await env.state(rt, name, (s) => s.status === 'paused', 'paused');
  for (let i = 0; i < 5; i++) await env.produce(topic, `p${i}`);
  const s = await env.state(
    rt,
    name,
    (x) => JSON.stringify(x['topic-lag']) === JSON.stringify([{ topic, lag: 5 }]),
    'lag 5 while paused',
  );
  assert.is(s.status, 'paused');
  assert.is(requestsOf(name).length, 0);
});

test('a header value expanded with CR or LF: the message is ignored (never retried), dead-lettered; the next goes on', async () => {
  const cfg: JsonObject = {
    'data-format': 'json',
    data: '${MSG_PAYLOAD}',
    variables: [{ name: 'H', 'value-from-message': { 'json-pointer': '/payload/h' } }],
    headers: [{ name: 'x-h', value: 'v=${H}' }],
    'dead-letter-topic': 'dlq-header',
    'retry-interval': '10ms',
  };
  const { topic, name } = await env.exporter(rt, hook.url, cfg);
  await env.produce(topic, JSON.stringify({ h: 'a\r\nInjected: 1' }));
  await env.produce(topic, JSON.stringify({ h: 'fine' }));
  const s = await env.state(rt, name, (x) => x.delivered === 1 && x.ignored === 1, 'one ignored, one delivered');
  assert.match(String(s['last-error']), /header x-h: the expanded value holds a carriage return \(CR\) at position 3/);
  assert.is(s['failed-attempts'], 0, 'never attempted');
  const got = requestsOf(name);
  assert.is(got.length, 1);
  assert.is(got[0]?.headers['x-h'], 'v=fine');
  const dl = await eventually(async () => {
    const info = await env.bus.topicInfo('dlq-header');
    return info && info.length === 1 ? info : undefined;
  }, 'the ignored message dead-lettered');
  assert.match(String(dl['last-entry']?.reason), /carriage return/);
});

test('writes: a static header value with CR or LF and a retry-interval under 10ms are 400s naming the field', async () => {
  const api = await startApi('embedded');
  try {
    const base = {
      topics: ['t1'],
      'site-placement': { 'all-sites': true },
      url: 'http://127.0.0.1:9/x',
      data: '${MSG_PAYLOAD}',
    };
    const cases: Array<[JsonObject, string, string]> = [
      [{ headers: [{ name: 'x-a', value: 'one\ntwo' }] }, 'headers[0]/value', 'line feed'],
      [
        {
          headers: [
            { name: 'x-a', value: 'ok' },
            { name: 'x-b', value: '${MSG_SEQNO}\r' },
          ],
        },
        'headers[1]/value',
        'carriage return',
      ],
      [{ 'retry-interval': '0ms' }, 'retry-interval', 'at least 10ms'],
      [{ 'retry-interval': '9ms' }, 'retry-interval', 'at least 10ms'],
    ];
    for (const [extra, field, words] of cases) {
      const r = await api.json('PUT', '/v1/config/volga/webhooks/w1', { body: { name: 'w1', ...base, ...extra } });
      assert.is(r.status, 400, JSON.stringify(extra));
      const text = JSON.stringify(r.body);
      assert.ok(text.includes(field) && text.includes(words), `${JSON.stringify(extra)}: ${text}`);
    }
    const ok = await api.json('PUT', '/v1/config/volga/webhooks/w1', {
      body: {
        name: 'w1',
        ...base,
        'retry-interval': '10ms',
        headers: [{ name: 'x-a', value: 'tab\there ${MSG_SEQNO}' }],
      },
    });
    assert.is(ok.status, 201, JSON.stringify(ok.body));
  } finally {
    await api.close();
  }
});

test.run();
