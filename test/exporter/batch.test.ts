/**
 * `batch` (CONTRACT §12) through real Redis and a real HTTP receiver on port 0: one POST per
 * batch (a JSON array with data-format json, datas joined by newlines with string), a failing
 * batch retried as one POST, a dropped batch dead-lettered message by message, a partial batch
 * sent at its max-wait (the exporter's clock: the test decides when that time has come),
 * signing over the batch's body, and the 400s of bad values.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createClient } from 'redis';
import { Webhook } from 'standardwebhooks';
import { openEnv, staticSecrets, uniq, type Env } from '../helpers/exporter-proc.js';
import { startWebhookServer, type WebhookServer } from '../helpers/webhook-server.js';
import type { Clock, Runtime } from '../../src/exporter/runtime.js';
import type { JsonObject } from '../../src/lib/json.js';
import { startApi } from '../helpers/api.js';
import { freshRedisDb } from '../helpers/redis.js';
import { eventually } from '../helpers/wait.js';

/** max-wait of the batches here: held until the test releases it; every other sleep returns at once. */
const holdMs = 3_600_000;

/** A clock whose `holdMs` sleeps end only at `release()` (or their abort); others at once. */
function batchClock(): Clock & { held: () => number; release(): void } {
  let held: Array<() => void> = [];
  return {
    now: () => Date.now(),
    held: () => held.length,
    release() {
      const all = held;
      held = [];
      for (const r of all) r();
    },
    sleep(ms, signal) {
      if (ms !== holdMs) return new Promise((r) => setImmediate(r));
      return new Promise<void>((resolve) => {
        if (signal?.aborted) return resolve();
        const done = () => {
          held = held.filter((r) => r !== done);
          resolve();
        };
        held.push(done);
        signal?.addEventListener('abort', done, { once: true });
      });
    },
  };
}

let env: Env;
let hook: WebhookServer;
let rt: Runtime;
let redis: ReturnType<typeof createClient>;
const clock = batchClock();
const signingKey = 'whsec_' + Buffer.from('fedcba9876543210fedcba9876543210').toString('base64');

test.before(async () => {
  env = await openEnv(await freshRedisDb(12));
  redis = createClient({ url: env.url });
  await redis.connect();
  hook = await startWebhookServer();
  await env.put('strongbox/vaults/v1/secrets/sig', { name: 'sig' });
  rt = await env.start({ clock, secrets: staticSecrets({ 'default/v1/sig': { key: signingKey } }) });
});
test.after(async () => {
  await env.close();
  await hook.close();
  await redis.close();
});

const requestsOf = (name: string) => hook.requests.filter((r) => r.path === `/${name}`);

/** An exporter on a topic that already holds `payloads` (start-position beginning: read at once). */
async function withBacklog(
  payloads: string[],
  cfg: JsonObject,
): Promise<{ topic: string; name: string; ids: string[] }> {
  const topic = uniq('topic-');
  const name = uniq('hook-');
  const ids: string[] = [];
  for (const p of payloads) ids.push(await env.produce(topic, p));
  await env.webhook({
    name,
    topics: [topic],
    'site-placement': { 'all-sites': true },
    url: `${hook.url}/${name}`,
    data: '${MSG_PAYLOAD}',
    'start-position': 'beginning',
    ...cfg,
  });
  return { topic, name, ids };
}

test('data-format json: a JSON array per POST of up to max-messages; the rest at max-wait', async () => {
  const payloads = Array.from({ length: 10 }, (_, i) => JSON.stringify({ i }));
  const { name } = await withBacklog(payloads, {
    'data-format': 'json',
    batch: { 'max-messages': 4, 'max-wait': '1h' },
    'max-in-flight': 1,
  });
  await hook.waitFor(() => requestsOf(name).length === 2, 'two full batches');
  // The last two wait in an open batch until its max-wait has passed.
  await eventually(() => clock.held() > 0 || undefined, 'the open batch waits for max-wait');
  assert.is(requestsOf(name).length, 2);
  clock.release();
  await hook.waitFor(() => requestsOf(name).length === 3, 'the partial batch at max-wait');
  const bodies = requestsOf(name).map((r) => JSON.parse(r.body) as Array<{ i: number }>);
  assert.equal(
    bodies.map((b) => b.map((m) => m.i)),
    [
      [0, 1, 2, 3],
      [4, 5, 6, 7],
      [8, 9],
    ],
  );
  assert.is(requestsOf(name)[0]!.headers['content-type'], 'application/json');
  // Counters count messages; the offset moved past every one of them.
  const s = await env.state(rt, name, (st) => st.delivered === 10, 'ten delivered');
  assert.is(s['failed-attempts'], 0);
  await env.state(
    rt,
    name,
    (st) => (st['topic-lag'] as Array<{ lag: number }>).every((t) => t.lag === 0),
    'nothing left unacknowledged',
  );
});

test('data-format string, 5xx then 2xx: the batch is retried as one POST, signed over its body', async () => {
  let flaky = 0;
  hook.script((_n, req) => (req.path.endsWith('-flaky') && ++flaky === 1 ? { status: 503 } : {}));
  const sink = uniq('sink-');
  const { name, ids } = await withBacklog(['alpha', 'beta', 'gamma'], {
    url: `${hook.url}/${sink}-flaky`,
    batch: { 'max-messages': 3, 'max-wait': '1h' },
    signing: { vault: 'v1', secret: 'sig', key: 'key' },
    headers: [{ name: 'x-first', value: '${MSG_SEQNO}' }],
  });
  const path = `/${sink}-flaky`;
  await hook.waitFor((reqs) => reqs.filter((r) => r.path === path && r.status === 200).length === 1, 'delivered');
  const all = hook.requests.filter((r) => r.path === path);
  assert.is(all.length, 2, 'one failed POST and its retry');
  for (const r of all) assert.is(r.body, 'alpha\nbeta\ngamma');
  assert.is(all[0]!.headers['content-type'], 'text/plain; charset=utf-8');
  assert.is(all[0]!.headers['x-first'], ids[0], 'headers expanded from the first message');
  const wh = new Webhook(signingKey);
  for (const r of all) {
    const headers = {
      'webhook-id': String(r.headers['webhook-id']),
      'webhook-timestamp': String(r.headers['webhook-timestamp']),
      'webhook-signature': String(r.headers['webhook-signature']),
    };
    assert.throws(() => wh.verify('alpha', headers), /signature/i);
    // verify parses the body as JSON after checking the signature: a string batch is not JSON.
    assert.throws(() => wh.verify(r.body, headers), /JSON|Unexpected token/i);
  }
  assert.is(all[0]!.headers['webhook-id'], all[1]!.headers['webhook-id'], 'the retry keeps its webhook-id');
  const s = await env.state(rt, name, (st) => st.delivered === 3, 'three delivered');
  assert.is(s['failed-attempts'], 1, 'one failed POST');
  hook.script([]);
});

test('signing: a json batch verifies with standardwebhooks', async () => {
  const { name } = await withBacklog(['{"a":1}', '{"b":2}'], {
    'data-format': 'json',
    batch: { 'max-messages': 2, 'max-wait': '1h' },
    signing: { vault: 'v1', secret: 'sig', key: 'key' },
  });
  await hook.waitFor(() => requestsOf(name).length === 1, 'one batch');
  const r = requestsOf(name)[0]!;
  const headers = {
    'webhook-id': String(r.headers['webhook-id']),
    'webhook-timestamp': String(r.headers['webhook-timestamp']),
    'webhook-signature': String(r.headers['webhook-signature']),
  };
  assert.equal(new Webhook(signingKey).verify(r.body, headers), [{ a: 1 }, { b: 2 }]);
  await env.state(rt, name, (st) => st.delivered === 2, 'two delivered');
});

test('a batch dropped after its tries: each message dead-lettered, counted dropped', async () => {
  const dlq = uniq('dlq-');
  hook.script((_n, req) => (req.path.endsWith('-down') ? { status: 500 } : {}));
  const sink = uniq('sink-');
  const { topic, name, ids } = await withBacklog(['m1', 'm2', 'm3'], {
    url: `${hook.url}/${sink}-down`,
    batch: { 'max-messages': 3, 'max-wait': '1h' },
    tries: 2,
    'dead-letter-topic': dlq,
  });
  const s = await env.state(rt, name, (st) => st.dropped === 3, 'three dropped');
  assert.is(s.delivered, 0);
  assert.is(hook.requests.filter((r) => r.path === `/${sink}-down`).length, 2, 'two POSTs of the one batch');
  const entries = await eventually(async () => {
    const raw = (await redis.sendCommand(['XRANGE', `volga:${dlq}`, '-', '+'])) as Array<[string, string[]]>;
    return raw.length === 3 ? raw.map(([, f]) => Object.fromEntries(pairs(f))) : undefined;
  }, 'three dead letters');
  assert.equal(
    entries.map((e) => [e.payload, e.seqno, e.topic, e.attempts, e['last-status']]),
    ids.map((id, i) => [`m${i + 1}`, id, topic, '2', '500']),
  );
  assert.is(entries[0]!.reason, `tries exhausted: POST to ${hook.url} answered HTTP 500`);
  hook.script([]);
});

function pairs(f: string[]): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (let i = 0; i < f.length; i += 2) out.push([f[i]!, f[i + 1]!]);
  return out;
}

test('max-bytes: the next message that would not fit starts a new batch', async () => {
  const { name } = await withBacklog(['aaaa', 'bbbb', 'cccc'], {
    batch: { 'max-messages': 100, 'max-bytes': 12, 'max-wait': '1h' },
  });
  // "aaaa\nbbbb" is 9 bytes (+ room for a separator each): the third would pass 12.
  await hook.waitFor(() => requestsOf(name).length === 1, 'the first batch, sealed by its size');
  await eventually(() => clock.held() > 0 || undefined, 'the second batch waits for max-wait');
  clock.release();
  await hook.waitFor(() => requestsOf(name).length === 2, 'the second batch');
  assert.equal(
    requestsOf(name).map((r) => r.body),
    ['aaaa\nbbbb', 'cccc'],
  );
});

test('batch is validated when written: 400 naming the field', async () => {
  const api = await startApi('embedded');
  try {
    const base = { topics: ['t1'], 'site-placement': { 'all-sites': true }, url: 'http://127.0.0.1:9/x', data: 'x' };
    const cases: Array<[JsonObject, string]> = [
      [{ batch: {} }, 'max-messages'],
      [{ batch: { 'max-messages': 0 } }, 'max-messages'],
      [{ batch: { 'max-messages': 10, 'max-bytes': 0 } }, 'max-bytes'],
      [{ batch: { 'max-messages': 10, 'max-wait': 'soon' } }, 'max-wait'],
      [{ batch: { 'max-messages': 10, extra: 1 } }, 'batch'],
      [{ batch: 5 }, 'batch'],
    ];
    for (const [extra, field] of cases) {
      const r = await api.json('PUT', '/v1/config/volga/webhooks/b1', { body: { name: 'b1', ...base, ...extra } });
      assert.is(r.status, 400, JSON.stringify(extra));
      assert.ok(JSON.stringify(r.body).includes(field), `${JSON.stringify(extra)}: ${JSON.stringify(r.body)}`);
    }
    const ok = await api.json('PUT', '/v1/config/volga/webhooks/b1', {
      body: { name: 'b1', ...base, batch: { 'max-messages': 100, 'max-bytes': 65536, 'max-wait': '200ms' } },
    });
    assert.is(ok.status, 201, JSON.stringify(ok.body));
    const withDefaults = await api.json('GET', '/v1/config/volga/webhooks/b1?with-defaults=true');
    assert.equal((withDefaults.body as JsonObject).batch, {
      'max-messages': 100,
      'max-bytes': 65536,
      'max-wait': '200ms',
    });
  } finally {
    await api.close();
  }
});

test.run();
