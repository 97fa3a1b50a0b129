/**
 * End to end through real Redis and a real HTTP receiver: variables, functions, filters,
 * data formats, retries (with a clock that never sleeps), invalid URLs, max-in-flight and
 * start positions. One Redis database for this file.
 */
import { Webhook } from 'standardwebhooks';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openEnv, fakeClock, staticSecrets, type Env, uniq } from '../helpers/exporter-proc.js';
import { startWebhookServer, type WebhookServer } from '../helpers/webhook-server.js';
import type { Runtime } from '../../src/exporter/runtime.js';
import { webhookStateKey } from '../../src/store/keys.js';
import type { JsonObject } from '../../src/lib/json.js';
import { freshRedisDb } from '../helpers/redis.js';
import { eventually } from '../helpers/wait.js';

let env: Env;
let hook: WebhookServer;
let rt: Runtime;
const clock = fakeClock();
const vault: Record<string, Record<string, string>> = {
  'default/v1/s1': { token: 'sekret' },
  'default/v1/rot': { token: 'old' },
};

test.before(async () => {
  env = await openEnv(await freshRedisDb(2));
  hook = await startWebhookServer();
  await env.put('sites/local', {
    name: 'local',
    type: 'edge',
    labels: { region: 'eu', tier: 'gold' },
    hosts: [{ 'host-id': 'h1', labels: { region: 'eu-west', gpu: 'yes' } }],
  });
  await env.put('system/settings', { 'default-domain': 'tenant.example' });
  await env.put('system/dns-zones/internal', { name: 'internal', domain: 'int.example' });
  await env.put('strongbox/vaults/v1/secrets/s1', { name: 's1' });
  rt = await env.start({ clock, secrets: staticSecrets(vault) });
});
test.after(async () => {
  await env.close();
  await hook.close();
});

/** An exporter on a fresh topic, ready: its topic and name. */
const exporter = (cfg: JsonObject) => env.exporter(rt, hook.url, cfg);

const bodiesOf = (name: string) => hook.delivered().filter((r) => r.path.startsWith(`/${name}`));

test('delivers the payload as text/plain by default', async () => {
  const { topic, name } = await exporter({});
  await env.produce(topic, 'hello');
  await hook.waitFor(() => bodiesOf(name).length === 1, 'one POST');
  const r = bodiesOf(name)[0]!;
  assert.is(r.method, 'POST');
  assert.is(r.body, 'hello');
  assert.is(r.headers['content-type'], 'text/plain; charset=utf-8');
  await env.state(rt, name, (s) => s.delivered === 1, 'delivered counter');
});

test('every message variable expands through a real POST', async () => {
  const { topic, name } = await exporter({
    data: '${MSG_PAYLOAD}|${MSG_PRODUCER_NAME}|${MSG_HOST}|${MSG_ORIGIN}|${MSG_TIME}|${MSG_MTIME}|${MSG_SEQNO}|${MSG_REMAIN}|${TOPIC}',
  });
  const id = await env.produce(topic, '{"temp":21}', {
    'producer-name': 'p1',
    host: 'h9',
    origin: 'o1',
    time: '2026-01-02T03:04:05.000Z',
  });
  await hook.waitFor(() => bodiesOf(name).length === 1, 'one POST');
  const mtime = id.split('-')[0];
  assert.is(bodiesOf(name)[0]!.body, `{"temp":21}|p1|h9|o1|2026-01-02T03:04:05.000Z|${mtime}|${id}|0|${topic}`);
});

test('MSG is the JSON object {time, mtime, seqno, remain, producer-name, host, origin, payload}; time defaults to mtime in ISO form', async () => {
  const { topic, name } = await exporter({ data: '${MSG}', 'data-format': 'json' });
  const id = await env.produce(topic, '{"a":[1,2]}');
  await hook.waitFor(() => bodiesOf(name).length === 1, 'one POST');
  const r = bodiesOf(name)[0]!;
  assert.is(r.headers['content-type'], 'application/json');
  const mtime = Number(id.split('-')[0]);
  assert.equal(JSON.parse(r.body), {
    time: new Date(mtime).toISOString(),
    mtime,
    seqno: id,
    remain: 0,
    payload: { a: [1, 2] },
  });
});

test('remain counts the entries after this one when read', async () => {
  const topic = uniq('topic-');
  for (let i = 0; i < 3; i++) await env.produce(topic, `m${i}`);
  const name = uniq('hook-');
  await env.webhook({
    name,
    topics: [topic],
    'start-position': 'beginning',
    'site-placement': { 'all-sites': true },
    url: `${hook.url}/${name}`,
    data: '${MSG_PAYLOAD}:${MSG_REMAIN}',
  });
  await hook.waitFor(() => bodiesOf(name).length === 3, 'three POSTs');
  assert.equal(
    bodiesOf(name).map((r) => r.body),
    ['m0:2', 'm1:1', 'm2:0'],
  );
});

test('system variables, site labels, dns zones, message and secret variables, functions', async () => {
  const { topic, name } = await exporter({
    url: `${hook.url}/\${SYS_SITE}-XX/\${ID}`.replace('-XX', '') + '?t=${TOKEN}',
    headers: [
      { name: 'x-site', value: '${SYS_SITE_LABELS[region]}' },
      { name: 'x-token', value: '${TOKEN | squote}' },
    ],
    variables: [
      { name: 'ID', 'value-from-message': { 'json-pointer': '/payload/id' } },
      { name: 'UNIT', 'value-from-message': { 'json-pointer': '/payload/unit', default: 'C' } },
      { name: 'TOKEN', 'value-from-vault-secret': { vault: 'v1', secret: 's1', key: 'token' } },
    ],
    data: '${SYS_TENANT} ${SYS_GLOBAL_DOMAIN} ${SYS_DNS_ZONES[default]} ${SYS_DNS_ZONES[internal]} ${SYS_SITE_LABELS[system/name]} ${SYS_SITE_LABELS[system/type]} ${SYS_SITE_LABELS[tier]} ${UNIT | dquote} ${MSG_PAYLOAD | replace "[0-9]+" N} ${ID | quote}\n${TOPIC | indent 2}',
  });
  await env.produce(topic, '{"id":"abc","v":42}');
  await hook.waitFor(() => hook.delivered().some((r) => r.path.startsWith('/local/abc')), 'POST to the expanded URL');
  const r = hook.delivered().find((x) => x.path.startsWith('/local/abc'))!;
  assert.is(r.path, '/local/abc?t=sekret');
  assert.is(r.headers['x-site'], 'eu,eu-west');
  assert.is(r.headers['x-token'], "'sekret'");
  assert.is(
    r.body,
    `default edge.example tenant.example int.example local edge gold "C" {"id":"abc","v":N} "abc"\n  ${topic}`,
  );
  void name;
});

test('a missing site label or pointer without default ignores the message and records it', async () => {
  const { topic, name } = await exporter({
    data: '${X}',
    variables: [{ name: 'X', 'value-from-message': { 'json-pointer': '/payload/nothere' } }],
  });
  await env.produce(topic, '{"a":1}');
  const s = await env.state(rt, name, (x) => x.ignored === 1, 'ignored counter');
  assert.match(String(s['last-error']), /X/);
  assert.ok(typeof s['last-error-time'] === 'string');
  const b = await exporter({ data: '${SYS_SITE_LABELS[nolabel]}' });
  await env.produce(b.topic, 'x');
  await env.state(rt, b.name, (x) => x.ignored === 1, 'ignored counter');
  assert.is(bodiesOf(name).length + bodiesOf(b.name).length, 0);
});

test('a declared variable no template refers to does not get messages ignored', async () => {
  const { topic, name } = await exporter({
    data: '${A}',
    variables: [
      { name: 'A', 'value-from-message': { 'json-pointer': '/payload/a' } },
      { name: 'UNUSED', 'value-from-message': { 'json-pointer': '/payload/nothere' } },
    ],
  });
  await env.produce(topic, '{"a":"x"}');
  await hook.waitFor(() => bodiesOf(name).length === 1, 'delivered');
  assert.is(bodiesOf(name)[0]?.body, 'x');
  assert.is(rt.exporterState('default', name)?.ignored, 0);
});

const filterCases: Array<[string, Record<string, string[]>, string[], string[]]> = [
  ['match-string', { 'match-string': ['"ok"'] }, ['{"s":"ok"}', '{"s":"ko"}'], ['{"s":"ok"}']],
  ['no-match-string', { 'no-match-string': ['debug'] }, ['debug x', 'info y'], ['info y']],
  ['match-re', { 'match-re': ['"temp":\\s*[3-9][0-9]'] }, ['{"temp":35}', '{"temp":12}'], ['{"temp":35}']],
  ['no-match-re', { 'no-match-re': ['(?i)HEARTBEAT'] }, ['heartbeat', 'alarm'], ['alarm']],
  [
    'all together',
    { 'match-string': ['a'], 'no-match-string': ['b'], 'match-re': ['^\\{'], 'no-match-re': ['"a[c]"'] },
    ['a', 'ab', 'ac', 'ad'],
    ['a', 'ad'],
  ],
];
for (const [label, filters, sent, expected] of filterCases) {
  test(`filter ${label} on the JSON text of MSG`, async () => {
    const { topic, name } = await exporter({ ...filters });
    for (const p of sent) await env.produce(topic, p);
    await env.state(rt, name, (s) => Number(s.delivered) + Number(s.filtered) === sent.length, 'all handled');
    assert.equal(
      bodiesOf(name).map((r) => r.body),
      expected,
    );
  });
}

test('data-format json: invalid JSON after expansion is ignored; a configured content-type wins', async () => {
  const { topic, name } = await exporter({ data: '{"v": ${MSG_PAYLOAD}}', 'data-format': 'json' });
  await env.produce(topic, 'not json');
  await env.produce(topic, '7');
  await hook.waitFor(() => bodiesOf(name).length === 1, 'one POST');
  assert.is(bodiesOf(name)[0]!.body, '{"v": 7}');
  await env.state(rt, name, (s) => s.ignored === 1, 'ignored');
  const b = await exporter({ headers: [{ name: 'Content-Type', value: 'application/x-custom' }] });
  await env.produce(b.topic, 'z');
  await hook.waitFor(() => bodiesOf(b.name).length === 1, 'one POST');
  assert.is(bodiesOf(b.name)[0]!.headers['content-type'], 'application/x-custom');
});

test('an invalid URL after expansion: no POST, message ignored', async () => {
  const { topic, name } = await exporter({ url: '${MSG_PAYLOAD}' });
  await env.produce(topic, 'not a url');
  await env.produce(topic, `${hook.url}/${name}/ok`);
  await hook.waitFor(() => bodiesOf(name).length === 1, 'one POST');
  const s = await env.state(rt, name, (x) => x.ignored === 1 && x.delivered === 1, 'counters');
  assert.match(String(s['last-error']), /url/);
});

test('500 then 200: retried and delivered once, failed attempt counted', async () => {
  const { topic, name } = await exporter({});
  let n = 0;
  hook.script((_i, req) => (req.body === 'r1' && ++n === 1 ? { status: 500 } : {}));
  await env.produce(topic, 'r1');
  await hook.waitFor(() => bodiesOf(name).length === 1, 'delivery after a retry');
  const s = await env.state(rt, name, (x) => x.delivered === 1, 'delivered');
  assert.is(s['failed-attempts'], 1);
  assert.match(String(s['last-error']), /500/);
  hook.script([]);
});

test('tries exhausted: dropped and counted, next message still delivered', async () => {
  const { topic, name } = await exporter({ tries: 3 });
  hook.script((_n, req) => (req.body === 'bad' ? { status: 503 } : {}));
  await env.produce(topic, 'bad');
  await env.produce(topic, 'good');
  const s = await env.state(rt, name, (x) => x.dropped === 1 && x.delivered === 1, 'dropped then delivered');
  assert.is(s['failed-attempts'], 3);
  assert.is(hook.requests.filter((r) => r.body === 'bad').length, 3);
  hook.script([]);
});

test('Retry-After (seconds and HTTP date) sets the wait, capped at max-retry-interval', async () => {
  const { topic, name } = await exporter({ 'retry-interval': '10ms', 'max-retry-interval': '5s' });
  const date = new Date(Date.now() + 120_000).toUTCString();
  let n = 0;
  hook.script((_i, req) => {
    if (req.body !== 'ra') return {};
    n++;
    if (n === 1) return { status: 429, headers: { 'retry-after': '2' } };
    if (n === 2) return { status: 503, headers: { 'retry-after': date } };
    return {};
  });
  const before = clock.sleeps.length;
  await env.produce(topic, 'ra');
  await hook.waitFor(() => bodiesOf(name).length === 1, 'delivered after two Retry-After');
  assert.equal(clock.sleeps.slice(before), [2000, 5000]);
  hook.script([]);
});

test('a hanging server and a reset connection are failed attempts', async () => {
  const { topic, name } = await exporter({});
  let n = 0;
  hook.script((_i, req) => {
    if (req.body !== 'h') return {};
    n++;
    return n === 1 ? { hang: true } : n === 2 ? { reset: true } : {};
  });
  await env.produce(topic, 'h');
  await hook.waitFor(() => bodiesOf(name).length === 1, 'delivered on the third attempt');
  const s = await env.state(rt, name, (x) => x.delivered === 1, 'delivered');
  assert.is(s['failed-attempts'], 2);
  hook.script([]);
});

test('max-in-flight 8 delivers every message; max-in-flight 1 keeps the order', async () => {
  const a = await exporter({ 'max-in-flight': 8 });
  const b = await exporter({});
  hook.script((i) => (i % 3 === 0 ? { delayMs: 5 } : {}));
  for (let i = 0; i < 50; i++) {
    await env.produce(a.topic, `a${i}`);
    await env.produce(b.topic, `b${i}`);
  }
  await hook.waitFor(() => bodiesOf(a.name).length === 50 && bodiesOf(b.name).length === 50, 'all delivered');
  assert.equal(new Set(bodiesOf(a.name).map((r) => r.body)).size, 50);
  assert.equal(
    bodiesOf(b.name).map((r) => r.body),
    Array.from({ length: 50 }, (_, i) => `b${i}`),
  );
  hook.script([]);
});

test('start-position end skips older messages; beginning reads them', async () => {
  const topic = uniq('topic-');
  await env.produce(topic, 'old');
  const endName = uniq('hook-');
  const begName = uniq('hook-');
  for (const [name, pos] of [
    [endName, 'end'],
    [begName, 'beginning'],
  ] as const) {
    await env.webhook({
      name,
      topics: [topic],
      'start-position': pos,
      'site-placement': { 'all-sites': true },
      url: `${hook.url}/${name}`,
      data: '${MSG_PAYLOAD}',
    });
    await env.state(rt, name, (s) => s.status === 'ready', 'ready');
  }
  await env.produce(topic, 'new');
  await hook.waitFor(() => bodiesOf(endName).length === 1 && bodiesOf(begName).length === 2, 'deliveries');
  assert.equal(
    bodiesOf(endName).map((r) => r.body),
    ['new'],
  );
  assert.equal(
    bodiesOf(begName).map((r) => r.body),
    ['old', 'new'],
  );
});

test('state is published to the store kv area', async () => {
  const { topic, name } = await exporter({});
  await env.produce(topic, 'k');
  const raw = await eventually(async () => {
    const v = await env.store.kvGet(webhookStateKey('default', name, 'local'));
    return v && JSON.parse(v).delivered === 1 ? v : undefined;
  }, 'kv state');
  const s = JSON.parse(raw);
  assert.is(s.status, 'ready');
  assert.equal(s['topic-lag'], [{ topic, lag: 0 }]);
  assert.ok(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/.test(s['start-time']));
});

test('a changed vault secret is sent from the next message on, without a restart', async () => {
  await env.put('strongbox/vaults/v1/secrets/rot', { name: 'rot' });
  const { topic, name } = await exporter({
    data: '${TOKEN}',
    variables: [{ name: 'TOKEN', 'value-from-vault-secret': { vault: 'v1', secret: 'rot', key: 'token' } }],
  });
  await env.produce(topic, 'a');
  await hook.waitFor(() => bodiesOf(name).length === 1, 'first POST');
  vault['default/v1/rot'] = { token: 'new' };
  // What writing the secret does: a change under strongbox.
  await env.put('strongbox/vaults/v1/secrets/rot', { name: 'rot', changed: 1 });
  const started = rt.exporterState('default', name)?.['start-time'];
  await eventually(async () => {
    await env.produce(topic, 'b');
    await new Promise((r) => setTimeout(r, 100));
    return bodiesOf(name).some((r) => r.body === 'new');
  }, 'the new value sent');
  assert.equal(bodiesOf(name)[0]!.body, 'old');
  assert.is(rt.exporterState('default', name)?.['start-time'], started, 'not restarted');
});

test('a rotated signing key signs from the next message on, without a restart', async () => {
  const keyA = 'whsec_' + Buffer.from('A'.repeat(32)).toString('base64');
  const keyB = 'whsec_' + Buffer.from('B'.repeat(32)).toString('base64');
  vault['default/v1/sigrot'] = { key: keyA };
  await env.put('strongbox/vaults/v1/secrets/sigrot', { name: 'sigrot' });
  const { topic, name } = await exporter({ signing: { vault: 'v1', secret: 'sigrot', key: 'key' } });
  const verifies = (key: string, r: { body: string; headers: Record<string, string | string[] | undefined> }) => {
    try {
      new Webhook(key).verify(
        r.body,
        {
          'webhook-id': String(r.headers['webhook-id']),
          'webhook-timestamp': String(r.headers['webhook-timestamp']),
          'webhook-signature': String(r.headers['webhook-signature']),
        },
        { jsonParse: false },
      );
      return true;
    } catch {
      return false;
    }
  };
  await env.produce(topic, 'a');
  await hook.waitFor(() => bodiesOf(name).length === 1, 'first POST');
  assert.ok(verifies(keyA, bodiesOf(name)[0]!), 'signed with the first key');
  vault['default/v1/sigrot'] = { key: keyB };
  await env.put('strongbox/vaults/v1/secrets/sigrot', { name: 'sigrot', changed: 1 });
  const started = rt.exporterState('default', name)?.['start-time'];
  await eventually(async () => {
    await env.produce(topic, 'b');
    await new Promise((r) => setTimeout(r, 100));
    return bodiesOf(name).some((r) => verifies(keyB, r));
  }, 'a POST signed with the new key');
  assert.is(rt.exporterState('default', name)?.['start-time'], started, 'not restarted');
});

test.run();
