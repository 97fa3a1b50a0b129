/**
 * Pure parts of the exporter, table-driven: durations, back-off and Retry-After, JSON
 * pointers, MSG, placement, site labels and configuration errors (codes and paths). Then
 * one end-to-end run on the embedded store and bus (no Redis).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApiError } from '../../src/lib/errors.js';
import type { JsonObject } from '../../src/lib/json.js';
import { backoffMs, mayRetry, nextDelayMs, retryAfterMs } from '../../src/exporter/retry.js';
import { Message, resolvePointer } from '../../src/exporter/message.js';
import { AttemptLog, attemptsKey, readAttempts } from '../../src/exporter/attempts.js';
import type { StreamEntry } from '../../src/bus/bus.js';
import { parseDuration } from '../../src/lib/duration.js';
import { parsePointer } from '../../src/lib/json-pointer.js';
import { placeHere, siteLabels } from '../../src/resources/placement.js';
import type { SiteContext } from '../../src/exporter/system-vars.js';
import { compileSpec } from '../../src/resources/webhook/spec.js';
import { openEmbeddedBus } from '../../src/bus/embedded-bus.js';
import { openEmbeddedStore } from '../../src/store/embedded.js';
import { startRuntime } from '../../src/exporter/runtime.js';
import { configKey } from '../../src/store/keys.js';
import { startWebhookServer } from '../helpers/webhook-server.js';
import { eventually } from '../helpers/wait.js';

const durations: Array<[string, number | undefined]> = [
  ['250ms', 250],
  ['1s', 1000],
  ['1.5s', undefined], // whole numbers only, as the schema has always required
  ['5m', 300_000],
  ['1h', 3_600_000],
  ['0s', 0],
  ['1', undefined],
  ['s', undefined],
  ['1d', undefined],
  ['-1s', undefined],
  [' 1s', undefined],
];
for (const [text, ms] of durations) {
  test(`duration ${JSON.stringify(text)}`, () => {
    if (ms !== undefined) {
      assert.is(parseDuration(text, 'retry-interval'), ms);
      return;
    }
    try {
      parseDuration(text, 'retry-interval');
      assert.unreachable();
    } catch (err) {
      assert.instance(err, ApiError);
      assert.is((err as ApiError).info?.code, 'invalid-duration');
      assert.is((err as ApiError).info?.path, 'retry-interval');
    }
  });
}

test('back-off doubles from the base, stays within ±20 % and never exceeds the maximum', () => {
  const policy = { tries: 0, baseMs: 100, maxMs: 1000 };
  assert.equal(
    [1, 2, 3, 4, 5, 9].map((a) => backoffMs(policy, a, () => 0.5)),
    [100, 200, 400, 800, 1000, 1000],
  );
  assert.is(
    backoffMs(policy, 1, () => 0),
    80,
  );
  assert.is(
    backoffMs(policy, 1, () => 1),
    120,
  );
  assert.is(
    backoffMs(policy, 10, () => 1),
    1000,
  );
});

test('Retry-After: seconds, HTTP date, garbage; capped at the maximum', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  assert.is(retryAfterMs('3', now), 3000);
  assert.is(retryAfterMs('Thu, 01 Jan 2026 00:00:10 GMT', now), 10_000);
  assert.is(retryAfterMs('Wed, 31 Dec 2025 00:00:10 GMT', now), 0);
  assert.is(retryAfterMs('soon', now), undefined);
  // Neither delay-seconds nor an HTTP-date: ignored (the back-off rules), not read as a date past.
  for (const bad of ['-5', '1.5', '+3', '2026-01-01']) assert.is(retryAfterMs(bad, now), undefined, bad);
  assert.is(retryAfterMs('Thursday, 01-Jan-26 00:00:10 GMT', now), 10_000, 'the obsolete RFC 850 form');
  assert.is(retryAfterMs(undefined, now), undefined);
  const policy = { tries: 0, baseMs: 100, maxMs: 5000 };
  assert.is(nextDelayMs(policy, 1, 60_000), 5000);
  assert.is(nextDelayMs(policy, 1, 2000), 2000);
});

test('tries: 0 is without limit, n allows n attempts in all', () => {
  assert.ok(mayRetry({ tries: 0, baseMs: 1, maxMs: 1 }, 1_000_000));
  assert.ok(mayRetry({ tries: 3, baseMs: 1, maxMs: 1 }, 2));
  assert.not.ok(mayRetry({ tries: 3, baseMs: 1, maxMs: 1 }, 3));
  assert.not.ok(mayRetry({ tries: 1, baseMs: 1, maxMs: 1 }, 1));
});

const msg = new Message(
  't',
  { id: '1700000000123-4', fields: { payload: '{"a":{"b/c":[10,"x"]},"s":"v","~k":1}', host: 'h' } },
  2,
);
const pointers: Array<[string, string | undefined]> = [
  ['/payload/a/b~1c/0', '10'],
  ['/payload/a/b~1c/1', 'x'],
  ['/payload/s', 'v'],
  ['/payload/~0k', '1'],
  ['/payload/a', '{"b/c":[10,"x"]}'],
  ['/mtime', '1700000000123'],
  ['/seqno', '1700000000123-4'],
  ['/remain', '2'],
  ['/host', 'h'],
  ['/origin', undefined],
  ['/payload/a/b~1c/2', undefined],
  ['/payload/a/b~1c/01', undefined],
  ['/payload/s/x', undefined],
];
for (const [p, v] of pointers) {
  test(`json pointer ${p}`, () => {
    assert.is(resolvePointer(msg.object, parsePointer(p)!), v);
    // Read from the member without building MSG: the same answer.
    assert.is(msg.valueAt(parsePointer(p)!), v);
  });
}

test('MSG: mtime is the number before the dash of the entry id, whatever the id', () => {
  for (const id of [
    '1700000000123-4',
    '5-0',
    '123',
    '',
    '-5',
    '0012-1',
    '1234567890123456-0',
    '12a-0',
    ' 12-0',
    '1e3-0',
  ]) {
    const want = Number(id.includes('-') ? id.slice(0, id.indexOf('-')) : id);
    assert.ok(Object.is(new Message('t', { id, fields: {} }, 0).mtime, want), id);
  }
});

test('MSG: its text is JSON.stringify of MSG, and a pointer reads what it reads in MSG', () => {
  const entries: StreamEntry[] = [
    { id: '1700000000123-4', fields: { payload: '{"a":{"b/c":[10,"x"]},"s":"v","~k":1}', host: 'h' } },
    { id: '5-0', fields: { payload: '12 apples', time: 'not "a" time\n', 'producer-name': 'p', origin: 'o' } },
    { id: '6-1', fields: { payload: '{"b": 1.50, "a":"\\u00e9\\n", "1":[true,null], "a":2}', host: '\u2028' } },
    { id: '7-0', fields: { payload: '"quoted"' } },
    { id: '8-0', fields: { payload: '-0' } },
    { id: '9-0', fields: {} },
    // Canonical payloads (their text is used as it stands) and near misses (parsed).
    {
      id: '10-0',
      fields: { payload: '{"a":"x\\"y\\u0001","s":"é😀\u2028","n":-1.5e-7,"t":true,"z":null,"o":{"p":[1]}}' },
    },
    { id: '11-0', fields: { payload: '{"a\\n":1,"a":{"b":2},"__proto__":{"x":1},"toString":3}' } },
    { id: '12-0', fields: { payload: '{"a":1,"a":2}' } },
    { id: '13-0', fields: { payload: '{"1":0,"a":[]}' } },
    { id: '14-0', fields: { payload: '"a\\"b"' } },
    { id: '15-0', fields: { payload: '"a\\/b"' } },
    { id: '16-0', fields: { payload: '[{"a":1},2]' } },
    { id: '17-0', fields: { payload: '1e5' } },
    { id: '18-0', fields: { payload: '{"a":"\\u0041"}' } },
    { id: '19-0', fields: { payload: '{}' } },
    { id: '20-0', fields: { payload: 'null' } },
  ];
  const pointers = ['', '/payload', '/payload/a', '/payload/a/1', '/payload/1/0', '/payload/s', '/payload/n'];
  const more = ['/payload/t', '/payload/z', '/payload/o', '/payload/a\n', '/payload/0', '/time', '/mtime', '/seqno'];
  const others = ['/remain', '/producer-name', '/host', '/origin', '/toString', '/payload/toString', '/__proto__'];
  for (const e of entries) {
    // MSG built and then read (its payload parsed), beside messages read without building it.
    const whole = new Message('t', e, 3).object;
    const m = new Message('t', e, 3);
    assert.is(m.text, JSON.stringify(whole), e.id);
    assert.is(new Message('t', e, 3).variable('MSG_PAYLOAD'), m.payloadText, e.id);
    for (const p of [...pointers, ...more, ...others, '/payload/__proto__']) {
      const tokens = parsePointer(p)!;
      assert.is(new Message('t', e, 3).valueAt(tokens), resolvePointer(whole, tokens), `${e.id} ${p}`);
      assert.is(m.valueAt(tokens), resolvePointer(whole, tokens), `${e.id} ${p} (same message)`);
    }
  }
});

test('MSG: with a canonical payload, its text holds the payload field as it stands', () => {
  const payload = '{"temp":15,"level":"info","sensor":"sensor-00001","pad":"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}';
  const m = new Message('t', { id: '1700000000123-4', fields: { payload, 'producer-name': 'bench' } }, 0);
  assert.is(
    m.text,
    `{"time":"2023-11-14T22:13:20.123Z","mtime":1700000000123,"seqno":"1700000000123-4","remain":0,"producer-name":"bench","payload":${payload}}`,
  );
  assert.is(m.valueAt(parsePointer('/payload/temp')!), '15');
  assert.is(m.valueAt(parsePointer('/payload/sensor')!), 'sensor-00001');
  assert.is(m.variable('MSG_PAYLOAD'), payload);
  // Released and read again: the same.
  const text = m.text;
  m.release();
  assert.is(m.text, text);
});

test('MSG: whether its text contains a string is told as the text would tell it, across its pieces too', () => {
  const payloads = [
    '{"temp":15,"level":"info","key":"k1","pad":"xx}"}',
    '{"a":"}","b":[1,{"c":"payload"}]}',
    '"quoted }"',
    '12',
    '{"b": 1}',
    '{}',
    'plain text',
  ];
  // Plain stamps and others (a time field, ids not of digits, an mtime past year 9999, a huge remain).
  const stamps: Array<[string, Record<string, string>, number]> = [
    ['1700000000123-4', {}, 7],
    ['1700000000123-5', { 'producer-name': 'bench' }, 0],
    ['1700000000124-0', { host: 'h"}', origin: 'o' }, 123456],
    ['1700000000124-1', { 'producer-name': 'bench' }, 7],
    ['9-9', { time: '2020-01-01T00:00:00.000Z' }, 7],
    ['00012-7', {}, 7],
    ['5', {}, 7],
    ['1-2-3', {}, 7],
    ['253402300800000-0', {}, 7],
    ['1700000000125-0', {}, 1e21],
  ];
  for (const [i, payload] of payloads.entries()) {
    for (const [id, extra, remain] of stamps) {
      const e: StreamEntry = { id, fields: { payload, ...extra } };
      const text = new Message('t', e, remain).text;
      // Every substring of up to 24 characters starting anywhere, and strings that are not in it.
      const needles = new Set<string>(['}}', '"payload":{"x', 'absent', ':}', `${payload}}x`, `"payload":${payload}}`]);
      for (let at = 0; at < text.length; at++) for (let n = 1; n <= 24; n++) needles.add(text.slice(at, at + n));
      for (const s of needles)
        assert.is(new Message('t', e, remain).includes(s), text.includes(s), `${i} ${id} ${JSON.stringify(s)}`);
      // With its text made already, and after a release: the same answers.
      const m = new Message('t', e, remain);
      void m.text;
      assert.is(m.includes('"payload":'), true);
      m.release();
      const at = text.indexOf(',"payload":');
      assert.is(m.includes(text.slice(at - 3, at + 14)), true);
    }
  }
});

test('MSG: a pointer reads its own payload when other payloads were scanned since', () => {
  const a = new Message('t', { id: '1-0', fields: { payload: '{"temp":1,"key":"ka"}' } }, 0);
  const b = new Message('t', { id: '1-1', fields: { payload: '{"key":"kb","temp":22,"x":[1]}' } }, 0);
  const temp = parsePointer('/payload/temp')!;
  const key = parsePointer('/payload/key')!;
  // Both scanned (a filter asks each), then read in turns: each its own places.
  assert.is(a.includes('"temp"'), true);
  assert.is(b.includes('"x"'), true);
  assert.is(a.valueAt(temp), '1');
  assert.is(b.valueAt(temp), '22');
  assert.is(a.valueAt(key), 'ka');
  assert.is(b.valueAt(key), 'kb');
  assert.is(new Message('t', { id: '1-2', fields: { payload: '{"temp" :3}' } }, 0).valueAt(temp), '3');
  assert.is(a.valueAt(temp), '1');
});

test('pointers must be empty or start with /', () => {
  assert.equal(parsePointer(''), []);
  assert.is(parsePointer('payload'), undefined);
});

test('MSG: time from mtime, payload kept as a string when it is not JSON', () => {
  assert.is(msg.time, '2023-11-14T22:13:20.123Z');
  assert.is(msg.variable('MSG_ORIGIN'), '');
  assert.is(msg.variable('MSG_PAYLOAD'), '{"a":{"b/c":[10,"x"]},"s":"v","~k":1}');
  const plain = new Message('t', { id: '5-0', fields: { payload: '12 apples', time: '2020-01-01T00:00:00.000Z' } }, 0);
  assert.equal(JSON.parse(plain.text), {
    time: '2020-01-01T00:00:00.000Z',
    mtime: 5,
    seqno: '5-0',
    remain: 0,
    payload: '12 apples',
  });
});

const ctx: SiteContext = {
  site: 'edge1',
  tenant: 'default',
  vars: new Map(),
  deployments: new Map([
    ['d1', 'gpu = yes'],
    ['d2', 'env = dev'],
  ]),
  labels: Object.fromEntries(
    siteLabels('edge1', {
      name: 'edge1',
      type: 'edge',
      labels: { env: 'prod' },
      hosts: [{ 'host-id': 'h', labels: { gpu: 'yes', env: 'prod2' } }],
    }).entries(),
  ),
};
const placements: Array<[JsonObject | undefined, true | false | 'invalid']> = [
  [{ 'all-sites': true }, true],
  [{ 'all-sites': { 'all-sites': true } }, true],
  [{ 'all-sites': false }, false],
  [{ sites: ['edge1'] }, true],
  [{ sites: [] }, false],
  [{ 'application-deployments': ['d2', 'd1'] }, true],
  [{ 'application-deployments': ['d2', 'missing'] }, false],
  [{ 'match-site-labels': 'env in {prod2} and system/name = edge1' }, true],
  [{ 'match-site-labels': 'system/type = cloud' }, false],
  [{ 'match-site-labels': 'env = (' }, 'invalid'],
  [{}, 'invalid'],
  [undefined, 'invalid'],
];
for (const [p, placed] of placements) {
  test(`placement ${JSON.stringify(p)} → ${placed}`, () => assert.is(placeHere(p, ctx).placed, placed));
}

test('site labels: own, hosts, system/*; only system/name without a site object', () => {
  assert.equal(Object.fromEntries(siteLabels('s', undefined)), { 'system/name': ['s'] });
  assert.equal(ctx.labels.env, ['prod', 'prod2']);
  assert.equal(ctx.labels['system/type'], ['edge']);
});

const badConfigs: Array<[string, JsonObject, string, string]> = [
  ['undeclared variable', { data: '${NOPE}' }, 'undefined-variable', 'data'],
  ['PCRE-only regex', { 'no-match-re': ['a(?=b)'] }, 'regex-unsupported', 'no-match-re[0]'],
  ['bad topic pattern', { 'topic-patterns': ['('] }, 'regex-syntax', 'topic-patterns[0]'],
  ['bad duration', { 'max-retry-interval': '1 minute' }, 'invalid-duration', 'max-retry-interval'],
  ['static invalid url', { url: 'ftp://x' }, 'invalid-config', 'url'],
  [
    'bad pointer',
    { variables: [{ name: 'X', 'value-from-message': { 'json-pointer': 'x' } }] },
    'invalid-config',
    'variables[0]/value-from-message/json-pointer',
  ],
  ['bad tries', { tries: -1 }, 'invalid-config', 'tries'],
];
for (const [label, extra, code, path] of badConfigs) {
  test(`config error: ${label}`, () => {
    try {
      compileSpec('default', {
        name: 'x',
        'site-placement': { 'all-sites': true },
        url: 'http://h/',
        data: 'd',
        ...extra,
      });
      assert.unreachable();
    } catch (err) {
      assert.instance(err, ApiError);
      assert.is((err as ApiError).info?.code, code);
      assert.is((err as ApiError).info?.path, path);
    }
  });
}

test('defaults: topic added to topics, 1 in flight, 1s..60s, unlimited tries, TLS verified', () => {
  const s = compileSpec('default', {
    name: 'x',
    topic: 'old',
    topics: ['a'],
    'site-placement': { 'all-sites': true },
    url: 'http://h/',
    data: 'd',
  });
  assert.equal(s.topics, ['a', 'old']);
  assert.equal(
    [s.maxInFlight, s.policy, s.start, s.format],
    [1, { tries: 0, baseMs: 1000, maxMs: 60_000 }, 'end', 'string'],
  );
  assert.equal(s.tls, { verify: true, ca: undefined, useRootCerts: true, serverName: undefined });
});

test('the runtime on the embedded store and bus delivers', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'edgeplane-emb-'));
  const store = await openEmbeddedStore(dir);
  const bus = openEmbeddedBus(dir);
  const hook = await startWebhookServer();
  const rt = await startRuntime({ settings: { site: 'local', globalDomain: 'g' }, store, bus, pollMs: 1000 });
  await store.commit([
    {
      op: 'put',
      key: configKey('default', 'volga/webhooks/e'),
      value: {
        name: 'e',
        topics: ['et'],
        'site-placement': { 'all-sites': true },
        url: `${hook.url}/e`,
        data: '${SYS_DNS_ZONES[default]} ${MSG_PAYLOAD}',
      },
    },
  ]);
  await eventually(() => rt.exporterState('default', 'e')?.status === 'ready', 'exporter e ready', 10_000);
  await bus.produce('et', { payload: 'hi' });
  await hook.waitFor(() => hook.delivered().length === 1, 'delivery');
  assert.is(hook.delivered()[0]!.body, 'local.local hi');
  await rt.stop(1000);
  await bus.close();
  await store.close();
  await hook.close();
});

test('the attempt log keeps the last 100 attempts, newest first, across flushes (its ring of records reused)', async () => {
  const store = await openEmbeddedStore(mkdtempSync(join(tmpdir(), 'edgeplane-att-')));
  const log = new AttemptLog(store, attemptsKey('default', 'a'), 60_000);
  const rec = (i: number, failed: boolean) =>
    log.record({
      time: 1_700_000_000_000 + i,
      topic: 't',
      seqno: `${i}-0`,
      attempt: 1,
      status: failed ? 502 : 200,
      error: failed ? 'bad gateway' : undefined,
      durationMs: 1,
      body: failed ? 'oops' : undefined,
    });
  for (let i = 0; i < 250; i++) rec(i, i < 200 && i % 2 === 1);
  await log.flush();
  let l = await readAttempts(store, 'default', 'a');
  assert.equal(
    l.map((a) => a.seqno),
    Array.from({ length: 100 }, (_, k) => `${249 - k}-0`),
  );
  // A reused record keeps nothing of the attempt it held before.
  assert.equal(Object.keys(l[0]!).sort(), ['attempt', 'duration-ms', 'seqno', 'status', 'time', 'topic']);
  assert.is(l[50]!.seqno, '199-0');
  assert.is(l[50]!.error, 'bad gateway');
  assert.is(l[50]!.body, 'oops');
  for (let i = 250; i < 253; i++) rec(i, false);
  await log.close();
  l = await readAttempts(store, 'default', 'a');
  assert.equal(
    l.map((a) => a.seqno),
    Array.from({ length: 100 }, (_, k) => `${252 - k}-0`),
  );
  await store.close();
});

test.run();
