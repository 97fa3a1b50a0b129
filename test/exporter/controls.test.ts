/**
 * Delivery controls end to end through real Redis and real HTTP receivers on port 0:
 * enabled (pause and resume), dead-letter-topic, retry-on, signing (verified with the
 * standardwebhooks package), attempt log, rewind, circuit breakers, max-in-flight auto, and
 * the write-time validation of each field. Retries and cool-downs run on a clock that never
 * sleeps.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createClient } from 'redis';
import { Webhook } from 'standardwebhooks';
import { openEnv, fakeClock, staticSecrets, type Env, uniq } from '../helpers/exporter-proc.js';
import { startWebhookServer, type WebhookServer } from '../helpers/webhook-server.js';
import { startApi } from '../helpers/api.js';
import type { Runtime } from '../../src/exporter/runtime.js';
import type { JsonObject } from '../../src/lib/json.js';
import { Breakers, breakerThreshold } from '../../src/exporter/breaker.js';
import { AdaptiveLimit } from '../../src/exporter/adaptive.js';
import { freshRedisDb } from '../helpers/redis.js';
import { eventually } from '../helpers/wait.js';

let env: Env;
let hook: WebhookServer;
let rt: Runtime;
let redis: ReturnType<typeof createClient>;
const clock = fakeClock();
const signingKey = 'whsec_' + Buffer.from('0123456789abcdef0123456789abcdef').toString('base64');

test.before(async () => {
  env = await openEnv(await freshRedisDb(7));
  redis = createClient({ url: env.url });
  await redis.connect();
  hook = await startWebhookServer();
  await env.put('strongbox/vaults/v1/secrets/sig', { name: 'sig' });
  rt = await env.start({
    clock,
    secrets: staticSecrets({ 'default/v1/sig': { key: signingKey, bad: 'not-a-whsec-value' } }),
  });
});
test.after(async () => {
  await env.close();
  await hook.close();
  await redis.close();
});

const exporter = (cfg: JsonObject, wait = true) => env.exporter(rt, hook.url, cfg, wait);

const bodiesOf = (name: string) => hook.delivered().filter((r) => r.path.startsWith(`/${name}`));
const requestsOf = (name: string) => hook.requests.filter((r) => r.path.startsWith(`/${name}`));

async function streamEntries(topic: string): Promise<Array<Record<string, string>>> {
  const raw = (await redis.sendCommand(['XRANGE', `volga:${topic}`, '-', '+'])) as Array<[string, string[]]>;
  return raw.map(([, f]) => {
    const o: Record<string, string> = {};
    for (let i = 0; i < f.length; i += 2) o[f[i]!] = f[i + 1]!;
    return o;
  });
}

/** An exporter of one topic, enabled or not. */
const pausable = (name: string, topic: string, enabled: boolean) => ({
  name,
  topics: [topic],
  'site-placement': { 'all-sites': true },
  url: `${hook.url}/${name}`,
  data: '${MSG_PAYLOAD}',
  enabled,
});

test('enabled false pauses (status paused, offsets kept); true resumes where it stopped', async () => {
  const { topic, name } = await exporter({});
  const enable = (enabled: boolean) => env.webhook(pausable(name, topic, enabled));
  await env.produce(topic, 'a1');
  await hook.waitFor(() => bodiesOf(name).length === 1, 'first delivery');
  await enable(false);
  await env.state(rt, name, (s) => s.status === 'paused', 'paused');
  for (const p of ['a2', 'a3', 'a4']) await env.produce(topic, p);
  // The group still exists and holds its position: three entries behind.
  const groups = (await redis.sendCommand(['XINFO', 'GROUPS', `volga:${topic}`])) as unknown[][];
  const g = groups[0]!;
  assert.is(g[g.indexOf('lag') + 1], 3);
  assert.is(bodiesOf(name).length, 1);
  await enable(true);
  await hook.waitFor(() => bodiesOf(name).length === 4, 'the three produced while paused');
  assert.equal(
    bodiesOf(name).map((r) => r.body),
    ['a1', 'a2', 'a3', 'a4'],
  );
  await env.state(rt, name, (s) => s.status === 'ready', 'ready again');
});

test('created paused (start-position end): what is produced meanwhile waits for it and shows as lag', async () => {
  const name = 'born-paused';
  const topic = 'born-paused-topic';
  const cfg = (enabled: boolean) => pausable(name, topic, enabled);
  await env.produce(topic, 'before');
  await env.webhook(cfg(false));
  await env.state(rt, name, (s) => s.status === 'paused', 'paused');
  for (const p of ['p1', 'p2']) await env.produce(topic, p);
  await env.state(
    rt,
    name,
    (s) => JSON.stringify(s['topic-lag']) === JSON.stringify([{ topic, lag: 2 }]),
    'a lag of the two produced while paused',
  );
  await env.webhook(cfg(true));
  await hook.waitFor(() => bodiesOf(name).length === 2, 'the two produced while paused');
  assert.equal(
    bodiesOf(name).map((r) => r.body),
    ['p1', 'p2'],
  );
});

/** An exporter of the topics a pattern finds (start-position end, the default). */
const patterned = (name: string, prefix: string, enabled: boolean) => ({
  name,
  'topic-patterns': [`^${prefix}`],
  'site-placement': { 'all-sites': true },
  url: `${hook.url}/${name}`,
  data: '${TOPIC}:${MSG_PAYLOAD}',
  enabled,
});

test('topic-patterns: a topic made while the exporter is paused is read whole at the resume', async () => {
  const name = uniq('pz-');
  const prefix = `${name}-t-`;
  await env.produce(`${prefix}old`, 'before');
  await env.webhook(patterned(name, prefix, true));
  await env.state(rt, name, (s) => s.status === 'ready', 'ready');
  await env.produce(`${prefix}old`, 'o1');
  await hook.waitFor(() => bodiesOf(name).length === 1, 'o1');
  await env.webhook(patterned(name, prefix, false));
  await env.state(rt, name, (s) => s.status === 'paused', 'paused');
  for (const p of ['y1', 'y2']) await env.produce(`${prefix}new`, p);
  await env.webhook(patterned(name, prefix, true));
  await hook.waitFor(() => bodiesOf(name).length === 3, 'the new topic read whole');
  assert.equal(
    bodiesOf(name)
      .map((r) => r.body)
      .sort(),
    [`${prefix}new:y1`, `${prefix}new:y2`, `${prefix}old:o1`],
  );
});

test('topic-patterns: a topic made while the process is down is read whole at its start', async () => {
  const name = uniq('pd-');
  const prefix = `${name}-t-`;
  await env.webhook(patterned(name, prefix, true));
  await env.state(rt, name, (s) => s.status === 'ready', 'ready');
  await env.produce(`${prefix}a`, 'a1');
  await hook.waitFor(() => bodiesOf(name).length === 1, 'a1');
  await rt.stop(1000);
  await env.produce(`${prefix}d`, 'd1');
  await env.produce(`${prefix}d`, 'd2');
  await env.produce(`${prefix}a`, 'a2');
  rt = await env.start({
    clock,
    secrets: staticSecrets({ 'default/v1/sig': { key: signingKey, bad: 'not-a-whsec-value' } }),
  });
  await hook.waitFor(() => bodiesOf(name).length === 4, 'd1, d2 and a2 after the start');
  assert.equal(
    bodiesOf(name)
      .map((r) => r.body)
      .sort(),
    [`${prefix}a:a1`, `${prefix}a:a2`, `${prefix}d:d1`, `${prefix}d:d2`],
  );
});

test("topic-patterns (start-position end): a topic older than the exporter, matched after a change of its patterns, is read from the exporter's first start", async () => {
  const name = uniq('po-');
  await env.produce(`${name}-old`, 'before the exporter');
  await env.webhook(patterned(name, `${name}-new`, true));
  await env.state(rt, name, (s) => s.status === 'ready', 'ready');
  await env.webhook(patterned(name, `${name}-`, true));
  await env.state(rt, name, (s) => JSON.stringify(s['consumed-topics']) === JSON.stringify([`${name}-old`]), 'found');
  await env.produce(`${name}-old`, 'after');
  await hook.waitFor(() => bodiesOf(name).length === 1, 'the new entry');
  assert.equal(
    bodiesOf(name).map((r) => r.body),
    [`${name}-old:after`],
  );
});

test('dead-letter-topic: a dropped and an ignored message land there with their reason', async () => {
  const dlq = uniq('dlq-');
  const { topic, name } = await exporter({ tries: 2, 'dead-letter-topic': dlq, url: '${MSG_PAYLOAD}' });
  hook.script((_n, req) => (req.path === `/${name}-bad` ? { status: 503 } : {}));
  const badId = await env.produce(topic, `${hook.url}/${name}-bad`);
  // With the optional fields of a message: they go along, so the entry can be produced again as it was.
  const ignoredId = String(
    await redis.sendCommand([
      'XADD',
      `volga:${topic}`,
      '*',
      'payload',
      'not a url at all',
      'producer-name',
      'p1',
      'host',
      'h1',
      'origin',
      'o1',
      'time',
      '2026-01-01T00:00:00.000Z',
    ]),
  );
  await env.produce(topic, `${hook.url}/${name}-good`);
  await env.state(rt, name, (s) => s.dropped === 1 && s.ignored === 1 && s.delivered === 1, 'all three handled');
  const entries = await eventually(async () => {
    const e = await streamEntries(dlq);
    return e.length === 2 ? e : undefined;
  }, 'two dead letters');
  assert.equal(entries[0], {
    payload: `${hook.url}/${name}-bad`,
    topic,
    seqno: badId,
    reason: `tries exhausted: POST to ${hook.url} answered HTTP 503`,
    attempts: '2',
    'last-status': '503',
  });
  assert.is(entries[1]!.payload, 'not a url at all');
  assert.equal(
    [entries[1]!['producer-name'], entries[1]!.host, entries[1]!.origin, entries[1]!.time],
    ['p1', 'h1', 'o1', '2026-01-01T00:00:00.000Z'],
  );
  assert.is(entries[1]!.seqno, ignoredId);
  assert.is(entries[1]!.attempts, '0');
  assert.is(entries[1]!['last-status'], '');
  assert.match(entries[1]!.reason!, /url/);
  hook.script([]);
});

test('dead-letter-topic that cannot be appended to: retrying with the reason in last-error, ready once it works', async () => {
  const dlq = uniq('dlq-broken-');
  await redis.set(`volga:${dlq}`, 'not a stream');
  const { topic, name } = await exporter({ 'dead-letter-topic': dlq, url: '${MSG_PAYLOAD}' });
  await env.produce(topic, 'not a url at all');
  const s = await env.state(rt, name, (x) => x.status === 'retrying', 'retrying while the append fails');
  assert.match(String(s['last-error']), new RegExp(`cannot append to the dead-letter topic ${dlq}: .*WRONGTYPE`));
  assert.is(s.ignored, 0, 'not handled yet');
  await redis.del(`volga:${dlq}`);
  const done = await env.state(rt, name, (x) => x.ignored === 1 && x.status === 'ready', 'handled, ready');
  assert.is(done['failed-attempts'], 0, 'no POST attempt failed');
  assert.is((await streamEntries(dlq)).length, 1);
});

test('retry-on: an unlisted 401 is dropped at once (to the dead-letter topic); a listed 503 is retried', async () => {
  const dlq = uniq('dlq-');
  const { topic, name } = await exporter({ 'retry-on': ['5xx', 'connection'], 'dead-letter-topic': dlq });
  let n503 = 0;
  hook.script((_n, req) => {
    if (!req.path.startsWith(`/${name}`)) return {};
    if (req.body === 'auth') return { status: 401 };
    if (req.body === 'flaky' && ++n503 <= 2) return { status: 503 };
    return {};
  });
  await env.produce(topic, 'auth');
  await env.produce(topic, 'flaky');
  await env.state(rt, name, (s) => s.dropped === 1 && s.delivered === 1, 'dropped and delivered');
  assert.is(requestsOf(name).filter((r) => r.body === 'auth').length, 1);
  assert.is(requestsOf(name).filter((r) => r.body === 'flaky').length, 3);
  const dl = await eventually(async () => {
    const e = await streamEntries(dlq);
    return e.length === 1 ? e[0] : undefined;
  }, 'one dead letter');
  assert.is(dl.payload, 'auth');
  assert.is(dl['last-status'], '401');
  assert.is(dl.attempts, '1');
  assert.match(dl.reason!, /retry-on/);
  hook.script([]);
});

test('retry-on: refusals it does not list never open the circuit breaker (each dropped at once, the status back to ready)', async () => {
  const { topic, name } = await exporter({ 'retry-on': ['5xx'], 'max-in-flight': 4 });
  hook.script((_n, req) => (req.path.startsWith(`/${name}`) ? { status: 400 } : {}));
  const n = breakerThreshold * 3;
  for (let i = 0; i < n; i++) await env.produce(topic, `bad-${i}`);
  // With the breaker fed, the drops past the threshold waited for cool-downs on the clock.
  await env.state(rt, name, (s) => s.dropped === n, 'every refusal dropped, none held back');
  const s = await env.state(rt, name, (st) => st.status === 'ready', 'ready: nothing waits');
  assert.is(s['next-attempt-time'] ?? null, null);
  assert.is(requestsOf(name).length, n, 'one POST each');
  hook.script([]);
});

test('a 2xx is the outcome on its status line: a body that never ends neither holds the slot nor fails the message', async () => {
  const { topic, name } = await exporter({ 'max-in-flight': 1 });
  hook.script((_n, req) => (req.path.startsWith(`/${name}`) && req.body === 'first' ? { hangBody: true } : {}));
  await env.produce(topic, 'first');
  await env.produce(topic, 'second');
  await env.state(rt, name, (s) => s.delivered === 2, 'both delivered');
  // Past the attempt timeout (1 s here) the first is still delivered once, never retried.
  await new Promise((r) => setTimeout(r, 1500));
  assert.equal(
    requestsOf(name).map((r) => r.body),
    ['first', 'second'],
  );
  const s = await env.state(rt, name, () => true, 'state');
  assert.is(s['failed-attempts'], 0);
  hook.script([]);
});

test('retry-on with a single code: 429 retried, a timeout (connection) not', async () => {
  const { topic, name } = await exporter({ 'retry-on': [429] });
  let n = 0;
  hook.script((_i, req) => {
    if (!req.path.startsWith(`/${name}`)) return {};
    if (req.body === 'busy' && ++n === 1) return { status: 429 };
    if (req.body === 'reset') return { reset: true };
    return {};
  });
  await env.produce(topic, 'busy');
  await env.produce(topic, 'reset');
  await env.state(rt, name, (s) => s.dropped === 1 && s.delivered === 1, 'one delivered, one dropped');
  assert.is(requestsOf(name).filter((r) => r.body === 'reset').length, 1);
  hook.script([]);
});

test('signing: every POST carries Standard Webhooks headers that standardwebhooks verifies', async () => {
  const { topic, name } = await exporter({ signing: { vault: 'v1', secret: 'sig', key: 'key' }, tries: 0 });
  let n = 0;
  hook.script((_i, req) =>
    req.path.startsWith(`/${name}`) && req.body === '{"a":1}' && ++n === 1 ? { status: 500 } : {},
  );
  const id1 = await env.produce(topic, '{"a":1}');
  await env.produce(topic, '{"b":2}');
  await hook.waitFor(() => bodiesOf(name).length === 2, 'two signed deliveries');
  const wh = new Webhook(signingKey);
  const all = requestsOf(name);
  assert.is(all.length, 3);
  for (const r of all) {
    const headers = {
      'webhook-id': String(r.headers['webhook-id']),
      'webhook-timestamp': String(r.headers['webhook-timestamp']),
      'webhook-signature': String(r.headers['webhook-signature']),
    };
    // verify checks the signature and the timestamp's age, then parses the JSON body.
    assert.ok(wh.verify(r.body, headers));
    // A tampered body does not verify.
    assert.throws(() => wh.verify('{"a":2}', headers), /signature/i);
  }
  // The retry of a message keeps its webhook-id.
  assert.is(all[0]!.headers['webhook-id'], all[1]!.headers['webhook-id']);
  assert.ok(String(all[0]!.headers['webhook-id']).includes(id1));
  assert.is.not(all[1]!.headers['webhook-id'], all[2]!.headers['webhook-id']);
  const s = rt.exporterState('default', name)!;
  assert.not.ok(JSON.stringify(s).includes(signingKey.slice(6)));
  hook.script([]);
});

test('signing with a vault value that is not a whsec_ key: status error without the value', async () => {
  const { name } = await exporter({ signing: { vault: 'v1', secret: 'sig', key: 'bad' } }, false);
  const s = await env.state(rt, name, (x) => x.status === 'error', 'error status');
  assert.match(String(s['last-error']), /whsec_/);
  assert.not.ok(String(s['last-error']).includes('not-a-whsec-value'));
});

test('signing with a key the secret does not have: the error names signing, not a variable', async () => {
  const { name } = await exporter({ signing: { vault: 'v1', secret: 'sig', key: 'absent' } }, false);
  const s = await env.state(rt, name, (x) => x.status === 'error', 'error status');
  assert.is(s['last-error'], 'signing: secret sig of vault v1 has no key absent');
});

test('circuit breaker: a failing origin is probed one at a time; another origin of the exporter is not held up', async () => {
  const other = await startWebhookServer();
  try {
    let aDown = true;
    let active = 0;
    const concurrency: number[] = [];
    hook.script((_n, req) => {
      if (!req.path.startsWith('/cb-a')) return {};
      active++;
      concurrency.push(active);
      setTimeout(() => active--, 15);
      return aDown ? { status: 503, delayMs: 15 } : { delayMs: 15 };
    });
    const { topic, name } = await exporter({
      url: '${MSG_PAYLOAD}',
      'max-in-flight': 4,
      'retry-interval': '10ms',
      'max-retry-interval': '80ms',
    });
    for (let i = 0; i < 6; i++) {
      await env.produce(topic, `${hook.url}/cb-a/${i}`);
      await env.produce(topic, `${other.url}/cb-b/${i}`);
    }
    for (let i = 6; i < 12; i++) await env.produce(topic, `${other.url}/cb-b/${i}`);
    // Every message to the healthy origin is delivered while the other is down.
    await other.waitFor((r) => r.length === 12, 'all twelve to origin B');
    const s = await env.state(
      rt,
      name,
      // next-attempt-time lives only while a wait lasts, and this clock's waits end at once
      // (retry-state.test.ts checks it on a clock moved by hand).
      (x) => x.status === 'retrying' && typeof x['failing-since'] === 'string',
      'retrying',
    );
    assert.match(String(s['last-error']), /circuit open|503/);
    await hook.waitFor(() => concurrency.length >= 25, 'probes to origin A');
    // Past the trip (threshold failures, plus those already in flight), one probe at a time.
    assert.ok(Math.max(...concurrency.slice(breakerThreshold + 8)) === 1, JSON.stringify(concurrency));
    aDown = false;
    await env.state(rt, name, (x) => x.delivered === 18, 'all delivered after recovery');
    const after = await env.state(rt, name, (x) => x.status === 'ready', 'ready again');
    assert.is(after['next-attempt-time'], undefined);
    assert.is(after['failing-since'], undefined);
    assert.is(
      new Set(
        hook
          .delivered()
          .filter((r) => r.path.startsWith('/cb-a'))
          .map((r) => r.path),
      ).size,
      6,
    );
  } finally {
    hook.script([]);
    await other.close();
  }
});

test('circuit breaker: cool-downs double per failed probe up to the maximum; a success closes it', async () => {
  const sleeps: number[] = [];
  const wakes: Array<() => void> = [];
  const manual = {
    now: () => 1_000_000,
    sleep: (ms: number) => {
      sleeps.push(ms);
      return new Promise<void>((r) => wakes.push(r));
    },
  };
  const changes: Array<number | undefined> = [];
  const b = new Breakers(manual, 100, 350, { onChange: (next) => changes.push(next) });
  const stop = new AbortController();
  for (let i = 0; i < breakerThreshold; i++) {
    assert.is(await b.admit('http://a', stop.signal), 'go');
    b.record('http://a', false, 'HTTP 503');
  }
  assert.equal(sleeps, [100]);
  assert.not.ok(b.ready('http://a'));
  assert.ok(b.ready('http://b'));
  const tick = () => new Promise((r) => setImmediate(r));
  const waiting: Array<{ done: boolean; p: Promise<string> }> = [];
  const admit = () => {
    const w = { done: false, p: b.admit('http://a', stop.signal) };
    void w.p.then(() => (w.done = true));
    waiting.push(w);
  };
  admit();
  for (const [i, expected] of [200, 350, 350].entries()) {
    admit();
    await tick();
    assert.ok(
      waiting.every((w) => !w.done),
      'all wait during the cool-down',
    );
    wakes.shift()!();
    await tick();
    await tick();
    assert.is(waiting.filter((w) => w.done).length, 1, 'one probe at a time');
    waiting.splice(
      waiting.findIndex((w) => w.done),
      1,
    );
    // A late failure of an attempt that is not the probe changes nothing.
    b.record('http://a', false, 'HTTP 503');
    assert.is(sleeps.length, i + 1);
    b.record('http://a', false, 'HTTP 503', true);
    assert.is(sleeps[sleeps.length - 1], expected);
  }
  wakes.shift()!();
  assert.is(await waiting[0]!.p, 'probe');
  b.record('http://a', true, undefined, true);
  assert.ok(b.ready('http://a'));
  assert.is(changes[changes.length - 1], undefined);
  assert.equal(changes.slice(0, 4), [1_000_100, 1_000_200, 1_000_350, 1_000_350]);
  stop.abort();
  b.close();
});

test('circuit breaker: remembers origins only while they fail, at most 10,000 closed ones (templated URLs)', () => {
  const b = new Breakers(fakeClock(), 100, 1000, { onChange: () => undefined });
  for (let i = 0; i < 3; i++) b.record('http://a', false, 'HTTP 503');
  assert.is(b.size, 1);
  b.record('http://a', true);
  assert.is(b.size, 0, 'a success forgets the origin');
  for (let i = 0; i < breakerThreshold; i++) b.record('http://open', false, 'HTTP 503');
  assert.not.ok(b.ready('http://open'));
  for (let i = 0; i < 25_000; i++) b.record(`http://host-${i}.test`, false, 'connection refused');
  assert.ok(b.size <= 10_001, `${b.size} remembered`);
  assert.not.ok(b.ready('http://open'), 'the open origin is kept');
  b.close();
});

test('max-in-flight auto: grows while round trips stay flat, backs off on 503s and on growing round trips', () => {
  let now = 0;
  const a = new AdaptiveLimit(() => now);
  // Flat 10 ms round trips with the limit in use: +1 per window.
  for (let i = 0; i < 200; i++) {
    a.started(a.limit);
    now += 10;
    a.done(10, false);
  }
  const grown = a.limit;
  assert.ok(grown > 20, String(grown));
  // Back-pressure: multiplicative decrease.
  a.started(a.limit);
  now += 10;
  a.done(10, true);
  now += 10;
  a.done(10, false);
  assert.is(a.limit, Math.floor(grown * 0.9));
  // Round trips ten times longer: decrease again.
  const before = a.limit;
  for (let i = 0; i < 3; i++) {
    now += 100;
    a.done(100, false);
  }
  assert.ok(a.limit < before, `${a.limit} < ${before}`);
});

test('max-in-flight auto end to end: every message delivered against a sink that sheds load', async () => {
  let active = 0;
  let peak = 0;
  hook.script((_n, req) => {
    if (!req.path.startsWith('/arc')) return {};
    if (active >= 3) return { status: 503 };
    active++;
    peak = Math.max(peak, active);
    setTimeout(() => active--, 10);
    return { delayMs: 10 };
  });
  try {
    const { topic, name } = await exporter({
      url: `${hook.url}/arc`,
      'max-in-flight': 'auto',
      'retry-interval': '10ms',
    });
    for (let i = 0; i < 60; i++) await env.produce(topic, `m${i}`);
    const s = await env.state(rt, name, (x) => x.delivered === 60, 'all delivered');
    assert.ok(typeof s['in-flight-limit'] === 'number' && s['in-flight-limit'] >= 1);
    assert.is(
      new Set(
        hook
          .delivered()
          .filter((r) => r.path === '/arc')
          .map((r) => r.body),
      ).size,
      60,
    );
    assert.ok(peak <= 3);
  } finally {
    hook.script([]);
  }
});

test('writes validate each control: bad values are 400s naming the field', async () => {
  const api = await startApi('embedded');
  try {
    const base = {
      topics: ['t1'],
      'site-placement': { 'all-sites': true },
      url: 'http://127.0.0.1:9/x',
      data: '${MSG_PAYLOAD}',
    };
    const cases: Array<[JsonObject, string]> = [
      [{ enabled: 'no' }, 'enabled'],
      [{ 'dead-letter-topic': 'bad/topic' }, 'dead-letter-topic'],
      [{ 'dead-letter-topic': 't1' }, 'dead-letter-topic'],
      // A pattern that finds the dead-letter topic would read its failures back forever.
      [
        { topics: [], 'topic-patterns': ['^dl'], 'dead-letter-topic': 'dl-dead' },
        'topic-patterns[0] \\"^dl\\" matches it',
      ],
      [{ 'retry-on': ['6xx'] }, 'retry-on'],
      [{ 'retry-on': ['timeout'] }, 'retry-on'],
      [{ signing: { vault: 'v1' } }, 'signing'],
      [{ signing: { vault: 'v1', secret: 's', key: 'k', extra: 1 } }, 'signing'],
      [{ 'max-in-flight': 'fast' }, 'max-in-flight'],
      [{ 'max-in-flight': 0 }, 'max-in-flight'],
    ];
    for (const [extra, field] of cases) {
      const r = await api.json('PUT', '/v1/config/volga/webhooks/w1', { body: { name: 'w1', ...base, ...extra } });
      assert.is(r.status, 400, JSON.stringify(extra));
      assert.ok(JSON.stringify(r.body).includes(field), `${JSON.stringify(extra)}: ${JSON.stringify(r.body)}`);
    }
    const ok = await api.json('PUT', '/v1/config/volga/webhooks/w1', {
      body: {
        name: 'w1',
        ...base,
        enabled: false,
        'dead-letter-topic': 'dlq',
        'retry-on': ['5xx', '429', 408, 'connection'],
        signing: { vault: 'v1', secret: 's', key: 'k' },
        'max-in-flight': 'auto',
      },
    });
    assert.is(ok.status, 201, JSON.stringify(ok.body));
  } finally {
    await api.close();
  }
});

test.run();
