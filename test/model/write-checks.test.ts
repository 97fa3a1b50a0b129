/**
 * Checked at write time: a url without variables must be an absolute http(s) URL; a
 * `data-format: json` template is rendered with sample values and must give JSON, else a 400
 * with the position in the template; the `json` expansion function writes a value as a JSON
 * string literal.
 */
import { suite, test } from 'uvu';
import * as assert from 'uvu/assert';
import { compileTemplate, knownVariable } from '../../src/expand/template.js';
import { startApi, type TestApi } from '../helpers/api.js';
import { schemaErrors } from '../../src/model/validate.js';
import { resolvePath } from '../../src/model/resources.js';
import { firstProblem } from '../helpers/assert.js';

const isDefined = (n: string) => knownVariable(n, new Set(['V']));

test('a schema error under a key with / shows the value found there (pointer tokens unescaped)', () => {
  const r = resolvePath('sites/s1');
  assert.ok(r);
  const errs = schemaErrors(r.def, { name: 's1', type: 'edge', labels: { 'app/tier': 5 } }, '/v1/config/sites/s1');
  assert.is(errs.length, 1);
  assert.match(errs[0]?.message ?? '', /^Cannot use 5 as labels\/app\/tier: expected string/);
});

test('json writes any value as a JSON string literal', () => {
  const t = compileTemplate('{"v": ${V | json}, "t": ${TOPIC | json}}', { field: 'data', isDefined });
  for (const value of ['plain', 'a "quoted" word', 'back\\slash', 'line\nbreak\ttab', '\u0001', 'ünï €', '']) {
    const r = t.render((n) => (n === 'V' ? value : n === 'TOPIC' ? 'x"y' : undefined));
    assert.ok(r.ok);
    if (r.ok) assert.equal(JSON.parse(r.value), { v: value, t: 'x"y' }, r.value);
  }
});

test('json takes no argument and chains with other functions', () => {
  assert.throws(() => compileTemplate('${V | json x}', { field: 'data', isDefined }), /json takes 0 argument/);
  const t = compileTemplate('${V | replace a b | json}', { field: 'data', isDefined });
  const r = t.render(() => 'aa"');
  assert.equal(r, { ok: true, value: '"bb\\""' });
});

const hook = (fields: Record<string, unknown>) => ({
  topics: ['t'],
  'site-placement': { 'all-sites': true },
  url: 'http://example.test/hook',
  data: '${MSG}',
  ...fields,
});

type ErrorBody = { errors: Array<{ 'error-message': string }> };

const api = suite('write-time checks (API)');
let client: TestApi;
let n = 0;
api.before(async () => {
  client = await startApi('embedded');
});
api.after(async () => {
  await client.close();
});

const create = (fields: Record<string, unknown>) =>
  client.json('POST', '/v1/config/volga/webhooks', { body: { name: `w${++n}`, ...hook(fields) } });

function refused(res: { status: number; body: unknown }, path: string, code: string) {
  assert.is(res.status, 400, JSON.stringify(res.body));
  const info = firstProblem(res.body);
  assert.is(info.path, path, JSON.stringify(res.body));
  assert.is(info.code, code, JSON.stringify(res.body));
  return info;
}

api('a url without variables that is not an absolute http(s) URL → 400 naming url', async () => {
  for (const url of [
    'not a url',
    'ftp://example.test/x',
    'file:///etc/passwd',
    '/relative/path',
    'http://',
    'example.test/x',
  ]) {
    const res = await create({ url });
    refused(res, 'url', 'invalid-url');
    assert.ok((res.body as ErrorBody).errors[0]?.['error-message'].includes('url'));
  }
  for (const url of [
    'http://example.test/x',
    'https://example.test:8443/a?b=c',
    'http://127.0.0.1:9/',
    '${V}/x',
    'http://h/$${x}',
  ]) {
    const res = await create({ url, variables: [{ name: 'V', 'value-from-message': { 'json-pointer': '/a' } }] });
    assert.is(res.status, 201, `${url}: ${JSON.stringify(res.body)}`);
  }
});

api('a PUT or PATCH that makes the url invalid → 400, nothing changes', async () => {
  assert.is((await client.json('PUT', '/v1/config/volga/webhooks/u1', { body: hook({}) })).status, 201);
  refused(
    await client.json('PATCH', '/v1/config/volga/webhooks/u1', { body: { url: 'ftp://x/y' } }),
    'url',
    'invalid-url',
  );
  refused(
    await client.json('PUT', '/v1/config/volga/webhooks/u1', { body: hook({ url: 'nope' }) }),
    'url',
    'invalid-url',
  );
  const now = await client.json('GET', '/v1/config/volga/webhooks/u1');
  assert.is((now.body as { url: string }).url, 'http://example.test/hook');
});

api('data-format json: a template that cannot give JSON → 400 with the position in the template', async () => {
  const cases: Array<[string, number]> = [
    ['{"a": "${TOPIC}"', 16],
    ['{"a": ${MSG}, }', 14],
    ['{"a": 1 "b": ${MSG_PAYLOAD}}', 8],
    ['{"a": ${MSG_PAYLOAD}}}', 21],
    ['[$${literal}, ${TOPIC}]', 1],
    ['not json', 1],
    // Text built-ins are never JSON unquoted (MSG_SEQNO is 1704067200000-0, MSG_TIME a date).
    ['{"a": ${MSG_SEQNO}}', 6],
    ['{"t": ${MSG_TIME}}', 6],
    // The broken part is named, not a good variable before it: the bare x at 17.
    ['{"a": ${A}, "b": x}', 17],
  ];
  for (const [data, position] of cases) {
    const info = refused(
      await create({
        data,
        'data-format': 'json',
        variables: [{ name: 'A', 'value-from-message': { 'json-pointer': '/payload/a' } }],
      }),
      'data',
      'invalid-json-template',
    );
    assert.is(info.position, position, data);
  }
});

api('data-format json: templates that give JSON for real messages are accepted', async () => {
  for (const data of [
    '${MSG}',
    '${MSG_PAYLOAD}',
    '{"topic": "${TOPIC}", "payload": ${MSG_PAYLOAD}, "seq": "${MSG_SEQNO}", "n": ${MSG_REMAIN}}',
    '{"text": "${MSG_PAYLOAD}"}',
    '{"v": ${V | json}, "msg": ${MSG | json}}',
    '{"site": ${SYS_SITE | dquote}, "zone": "${SYS_DNS_ZONES[default]}"}',
    '[1, 2, 3]',
  ]) {
    const res = await create({
      data,
      'data-format': 'json',
      variables: [{ name: 'V', 'value-from-message': { 'json-pointer': '/payload/v' } }],
    });
    assert.is(res.status, 201, `${data}: ${JSON.stringify(res.body)}`);
  }
  // The same text is fine as a string body.
  assert.is((await create({ data: '{"a": "${TOPIC}"' })).status, 201);
});

api('switching data-format to json on a data that is no JSON → 400', async () => {
  assert.is(
    (await client.json('PUT', '/v1/config/volga/webhooks/j1', { body: hook({ data: 'x=${TOPIC}' }) })).status,
    201,
  );
  refused(
    await client.json('PATCH', '/v1/config/volga/webhooks/j1', { body: { 'data-format': 'json' } }),
    'data',
    'invalid-json-template',
  );
});

test.run();
api.run();
