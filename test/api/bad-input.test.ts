/**
 * Bad input never reaches the store and never gives a 500: invalid JSON/YAML, alias bombs,
 * wrong or missing content types, bodies over MAX_BODY_BYTES (413), deep nesting, schema
 * violations, bad names, bad expressions in fields — each a 4xx whose error-info names the
 * problem (code) and its place (position or field path). After every case the whole
 * configuration (with ETags) is compared with its state before. Both stores (Redis DB 4).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { useApi } from '../helpers/api.js';
import { forEachBackend, type Backend } from '../helpers/backends.js';
import { problemOf, wireErrors } from '../helpers/assert.js';

type ErrorInfo = {
  code?: string;
  path?: string;
  position?: number | [number, number];
  index?: number;
  [k: string]: unknown;
};

function infosOf(body: unknown): ErrorInfo[] {
  return wireErrors(body).map((e) => problemOf(e) as ErrorInfo);
}

const LIMIT = 4096;
const HOOK = '/v1/config/volga/webhooks/b1';
const hook = {
  name: 'b1',
  topics: ['t1'],
  'site-placement': { 'all-sites': true },
  url: 'http://example.test/hook',
  data: '${MSG}',
};

type Case = {
  name: string;
  method?: string;
  path?: string;
  raw?: string;
  body?: unknown;
  type?: string;
  headers?: Record<string, string>;
  status: number;
  code: string;
  /** The place reported: a field path (info.path) or a position (info.position). */
  at?: { path?: string; position?: number | [number, number]; index?: number };
  /** The error-message of the error with `code`. */
  message?: string;
  /** How many errors the reply holds (one clear error rather than several about the same field). */
  errors?: number;
};

const deepJson = (n: number) => `{"name":"b1","labels":${'{"a":'.repeat(n)}"x"${'}'.repeat(n)}}`;
const deepYaml = (n: number) => `name: b1\nlabels: ${'['.repeat(n)}x${']'.repeat(n)}\n`;
const aliasBomb = [
  'a: &a ["x","x","x","x","x","x","x","x","x"]',
  ...'bcdefghij'.split('').map((k, i) => `${k}: &${k} [${Array(9).fill(`*${'abcdefghij'[i]}`).join(',')}]`),
].join('\n');

const cases: Case[] = [
  { name: 'invalid JSON', raw: '{"name": "b1",}', status: 400, code: 'syntax', at: { position: 14 } },
  { name: 'trailing text after JSON', raw: '{"name":"b1"} x', status: 400, code: 'syntax', at: { position: 14 } },
  {
    name: 'invalid YAML',
    raw: 'name: [b1',
    type: 'application/yaml',
    status: 400,
    code: 'syntax',
    at: { position: 9 },
  },
  {
    name: 'YAML tab indentation error',
    raw: 'name: b1\n  url: x\n bad',
    type: 'application/yaml',
    status: 400,
    code: 'syntax',
  },
  { name: 'YAML alias bomb', raw: aliasBomb, type: 'application/yaml', status: 400, code: 'alias-limit' },
  {
    name: 'YAML unresolved alias',
    raw: 'name: b1\nurl: *nothing\n',
    type: 'application/yaml',
    status: 400,
    code: 'bad-alias',
    at: { position: 14 },
  },
  {
    name: 'YAML non-JSON value (binary)',
    raw: 'name: b1\ndata: !!binary aGVsbG8=\n',
    type: 'application/yaml',
    status: 400,
    code: 'not-json',
    at: { path: '/data' },
  },
  {
    name: 'YAML .inf',
    raw: 'name: b1\ntries: .inf\n',
    type: 'application/yaml',
    status: 400,
    code: 'not-json',
    at: { path: '/tries' },
  },
  {
    name: 'JSON unexpected token (no secret echoed)',
    raw: '{"name":"b1","data": hunter2}',
    status: 400,
    code: 'syntax',
    at: { position: 21 },
  },
  { name: 'JSON cut short', raw: '{"name":"b1",', status: 400, code: 'syntax', at: { position: 13 } },
  {
    name: 'JSON number out of range',
    raw: '{"name":"b1","tries":1e400}',
    status: 400,
    code: 'not-json',
    at: { path: '/tries' },
  },
  { name: 'wrong content type', raw: 'name=b1', type: 'text/plain', status: 415, code: 'unsupported-content-type' },
  {
    name: 'form content type',
    raw: 'name=b1',
    type: 'application/x-www-form-urlencoded',
    status: 415,
    code: 'unsupported-content-type',
  },
  { name: 'missing content type', raw: '{"name":"b1"}', type: '', status: 415, code: 'missing-content-type' },
  { name: 'empty body', raw: '   ', status: 400, code: 'empty-body' },
  {
    name: 'body over MAX_BODY_BYTES',
    raw: JSON.stringify({ ...hook, data: 'x'.repeat(LIMIT) }),
    status: 413,
    code: 'body-too-large',
  },
  {
    name: 'body over MAX_BODY_BYTES (YAML)',
    raw: `name: b1\ndata: ${'y'.repeat(LIMIT)}\n`,
    type: 'application/yaml',
    status: 413,
    code: 'body-too-large',
  },
  { name: 'deep JSON nesting', raw: deepJson(100), status: 400, code: 'too-deep' },
  { name: 'deep YAML nesting', raw: deepYaml(100), type: 'application/yaml', status: 400, code: 'too-deep' },
  { name: 'JSON body is a list', body: [hook], status: 400, code: 'not-an-object' },
  {
    name: 'JSON body is a string',
    raw: '"b1"',
    status: 400,
    code: 'not-an-object',
    message: 'Cannot use a string as the body: it must be one object',
  },
  {
    name: 'JSON body is null',
    raw: 'null',
    status: 400,
    code: 'not-an-object',
    message: 'Cannot use null as the body: it must be one object',
  },
  {
    name: 'schema: wrong type',
    body: { ...hook, tries: 'three' },
    status: 400,
    code: 'schema-type',
    at: { path: 'tries' },
  },
  {
    name: 'schema: missing required url',
    body: { ...hook, url: undefined },
    status: 400,
    code: 'schema-required',
    at: { path: 'url' },
  },
  {
    name: 'schema: unknown field',
    body: { ...hook, colour: 'red' },
    status: 400,
    code: 'unknown-field',
    at: { path: 'colour' },
  },
  {
    name: 'schema: uint32 overflow',
    body: { ...hook, tries: 4294967296 },
    status: 400,
    code: 'schema-maximum',
    at: { path: 'tries' },
    message: `Cannot use 4294967296 as tries: it must be an integer from 0 to 4294967295 (${HOOK})`,
  },
  {
    name: 'schema: integer or "auto", too large for either',
    // Raw text: the literal as a client sends it (JSON.parse reads it as 1e+23).
    raw: JSON.stringify({ ...hook, 'max-in-flight': 0 }).replace(
      '"max-in-flight":0',
      '"max-in-flight":99999999999999999999999',
    ),
    status: 400,
    code: 'schema-invalid',
    at: { path: 'max-in-flight' },
    message: `Cannot use 1e+23 as max-in-flight: it must be an integer from 1 to 4096 or "auto" (${HOOK})`,
    errors: 1,
  },
  {
    name: 'schema: integer or "auto", a string near "auto"',
    body: { ...hook, 'max-in-flight': 'autox' },
    status: 400,
    code: 'schema-invalid',
    at: { path: 'max-in-flight' },
    message: `Cannot use "autox" as max-in-flight: it must be an integer from 1 to 4096 or "auto" (${HOOK})`,
    errors: 1,
  },
  {
    name: 'schema: exclusive minimum',
    body: { ...hook, 'rate-limit': { 'per-second': 0 } },
    status: 400,
    code: 'schema-invalid',
    at: { path: 'rate-limit/per-second' },
    message: `Cannot use 0 as rate-limit/per-second: it must be a number greater than 0 and at most 1000000 (${HOOK})`,
    errors: 1,
  },
  // An oauth2 token-url that is no http(s) URL: refused when written, not at run time.
  ...(['ftp://x', 'not a url'] as const).map((url) => ({
    name: `oauth2 token-url ${JSON.stringify(url)}`,
    body: {
      ...hook,
      oauth2: { 'token-url': url, 'client-id': 'c', 'client-secret': { vault: 'v', secret: 's', key: 'k' } },
    },
    status: 400,
    code: 'invalid-url',
    at: { path: 'oauth2/token-url' },
    message: `Cannot use ${JSON.stringify(url)} as oauth2/token-url: it must be an absolute http or https URL (${HOOK})`,
  })),
  {
    name: 'schema: maximum next to an exclusive minimum',
    body: { ...hook, 'rate-limit': { 'per-second': 1e7 } },
    status: 400,
    code: 'schema-maximum',
    at: { path: 'rate-limit/per-second' },
    message: `Cannot use 10000000 as rate-limit/per-second: it must be a number greater than 0 and at most 1000000 (${HOOK})`,
  },
  {
    name: 'schema: bad topic name',
    body: { ...hook, topics: ['ok', 'not ok'] },
    status: 400,
    code: 'schema-pattern',
    at: { path: 'topics[1]' },
  },
  {
    name: 'schema: bad header entry',
    body: { ...hook, headers: [{ name: 'x-a' }] },
    status: 400,
    code: 'schema-required',
    at: { path: 'headers[0]/value' },
  },
  {
    name: 'schema: two placements',
    body: { ...hook, 'site-placement': { 'all-sites': true, sites: ['a'] } },
    status: 400,
    code: 'schema-maxProperties',
    at: { path: 'site-placement' },
  },
  {
    name: 'schema: bad duration',
    body: { ...hook, 'retry-interval': '5 minutes' },
    status: 400,
    code: 'schema-pattern',
    at: { path: 'retry-interval' },
  },
  {
    name: 'schema: a fraction is not a duration',
    body: { ...hook, 'max-retry-interval': '1.5s' },
    status: 400,
    code: 'schema-pattern',
    at: { path: 'max-retry-interval' },
  },
  {
    // Node's timers fire a wait above ~24.8 days at once: 1000h was retried ~750 times a second.
    name: 'a duration above 576h (24 days)',
    body: { ...hook, 'retry-interval': '1000h', 'max-retry-interval': '1000h' },
    status: 400,
    code: 'invalid-duration',
    at: { path: 'retry-interval' },
    message: `Cannot use "1000h" as retry-interval: at most 576h (24 days) (${HOOK})`,
  },
  {
    name: 'a max-retry-interval above 576h',
    body: { ...hook, 'max-retry-interval': '577h' },
    status: 400,
    code: 'invalid-duration',
    at: { path: 'max-retry-interval' },
  },
  {
    name: 'a batch max-wait above 576h',
    body: { ...hook, batch: { 'max-messages': 10, 'max-wait': '2073600001ms' } },
    status: 400,
    code: 'invalid-duration',
    at: { path: 'batch/max-wait' },
  },
  {
    // name goes with the source: it is not one of the choices.
    name: 'a variable without a source',
    body: { ...hook, variables: [{ name: 'A' }] },
    status: 400,
    code: 'schema-minProperties',
    at: { path: 'variables[0]' },
    message: `Cannot use {"name":"A"} as variables[0]: give exactly one of value-from-vault-secret, value-from-message beside name (${HOOK})`,
  },
  {
    // Once, by the schema (not a second time as invalid-policy, with another path notation).
    name: 'a policy rule with a bad effect',
    path: '/v1/config/system/policies/p1',
    body: { rules: [{ path: '/v1/config/x', operations: ['read'], effect: 'maybe' }] },
    status: 400,
    code: 'schema-enum',
    at: { path: 'rules[0]/effect' },
    errors: 1,
  },
  {
    name: 'a policy rule path that is not a pattern',
    path: '/v1/config/system/policies/p1',
    body: { rules: [{ path: '/v1/config/volga/web*', operations: ['read'], effect: 'allow' }] },
    status: 400,
    code: 'bad-pattern',
    at: { path: '/rules/0/path' },
    errors: 1,
  },
  {
    // The same code as text and as number: one entry (the schema's uniqueness sees two values).
    name: 'retry-on with a code twice',
    body: { ...hook, 'retry-on': ['429', 429, '5xx'] },
    status: 400,
    code: 'invalid-config',
    at: { path: 'retry-on[1]' },
    errors: 1,
  },
  {
    // Reported once, by the schema (it was reported a second time by the write check).
    name: 'retry-on with an entry that is not a class, a code or connection',
    body: { ...hook, 'retry-on': ['6xx'] },
    status: 400,
    code: 'schema-invalid',
    at: { path: 'retry-on[0]' },
    errors: 1,
  },
  // Not failures: a 1xx is never final, a 2xx is a success.
  ...(['2xx', '1xx', 200, '204'] as const).map((entry) => ({
    name: `retry-on with ${JSON.stringify(entry)}, which is no failure`,
    body: { ...hook, 'retry-on': ['5xx', entry] },
    status: 400,
    code: 'schema-invalid',
    at: { path: 'retry-on[1]' },
    errors: 1,
  })),
  {
    // A password or a secret value is never echoed in an error (a reply, a log line of EDGEPLANE_CONFIG).
    name: 'a password too short: said, not shown',
    path: '/v1/config/system/users/u1',
    body: { password: 'hunter2', policies: ['admin'] },
    status: 400,
    code: 'schema-minLength',
    at: { path: 'password' },
    message: 'Cannot use (secret) as password: it must not be shorter than 8 (/v1/config/system/users/u1)',
  },
  {
    name: 'secret data that is not an object: said, not shown',
    path: '/v1/config/strongbox/vaults/v1/secrets/s1',
    body: { data: 'hunter2' },
    status: 400,
    code: 'schema-type',
    at: { path: 'data' },
  },
  {
    name: 'a secret value that is not a string: said, not shown',
    path: '/v1/config/strongbox/vaults/v1/secrets/s1',
    body: { data: { k: ['hunter2'] } },
    status: 400,
    code: 'schema-type',
    at: { path: 'data/k' },
  },
  {
    name: 'a body on restart, an operation that takes none',
    method: 'POST',
    path: '/v1/state/volga/webhooks/b1/restart',
    body: { to: 'beginning' },
    status: 400,
    code: 'no-body',
  },
  {
    name: 'a body on token refresh, an operation that takes none',
    method: 'POST',
    path: '/v1/state/strongbox/token/refresh',
    body: { x: 1 },
    status: 400,
    code: 'no-body',
  },
  {
    // One error (the schema's), not a second about wave 1 coming 'after 0 in an earlier wave'.
    name: 'a rollout percent of 0',
    body: { ...hook, rollout: { waves: [{ percent: 0 }] } },
    status: 400,
    code: 'schema-minimum',
    at: { path: 'rollout/waves[0]/percent' },
    errors: 1,
  },
  {
    name: 'a rollout wait above 576h',
    body: { ...hook, rollout: { waves: [{ percent: 50 }, { percent: 100 }], wait: '1000h' } },
    status: 400,
    code: 'invalid-duration',
    at: { path: 'rollout/wait' },
  },
  {
    // undici refuses it at every attempt: with tries 0 the first message was retried forever.
    name: 'a header the HTTP client frames the request with',
    body: { ...hook, headers: [{ name: 'Content-Length', value: '5' }] },
    status: 400,
    code: 'invalid-config',
    at: { path: 'headers[0]/name' },
    message: `Cannot send header Content-Length (headers[0]/name): the body sets it (${HOOK})`,
  },
  {
    name: 'connection other than close or keep-alive',
    body: {
      ...hook,
      headers: [
        { name: 'x-a', value: '1' },
        { name: 'connection', value: 'upgrade' },
      ],
    },
    status: 400,
    code: 'invalid-config',
    at: { path: 'headers[1]/name' },
  },
  {
    name: 'authorization beside oauth2 (it would silently replace the token)',
    body: {
      ...hook,
      headers: [{ name: 'Authorization', value: 'Basic Zm9vOmJhcg==' }],
      oauth2: {
        'token-url': 'https://auth.example.test/token',
        'client-id': 'c',
        'client-secret': { vault: 'v', secret: 's', key: 'k' },
      },
    },
    status: 400,
    code: 'invalid-config',
    at: { path: 'headers[0]/name' },
  },
  {
    name: 'schema: ~ in a JSON pointer is only ~0 or ~1',
    body: {
      ...hook,
      variables: [{ name: 'V', 'value-from-message': { 'json-pointer': '/payload/a~2b' } }],
    },
    status: 400,
    code: 'schema-pattern',
    at: { path: 'variables[0]/value-from-message/json-pointer' },
  },
  {
    name: 'no topics at all',
    body: { ...hook, topics: undefined },
    status: 400,
    code: 'no-topics',
    at: { path: 'topics' },
  },
  {
    name: 'PCRE-only regex',
    body: { ...hook, 'topic-patterns': ['ok.*', '(?<=a)b'] },
    status: 400,
    code: 'regex-unsupported',
    at: { path: 'topic-patterns[1]', position: 0 },
  },
  {
    name: 'undefined variable in url',
    body: { ...hook, url: 'http://x.test/${NOPE}' },
    status: 400,
    code: 'undefined-variable',
    at: { path: 'url' },
  },
  {
    name: 'a filter twice in a list of filters (a set)',
    body: { ...hook, 'match-re': ['b', 'a', 'b'] },
    status: 400,
    code: 'schema-uniqueItems',
    at: { path: 'match-re' },
  },
  {
    name: 'an indexed built-in without its index',
    body: { ...hook, data: 'zone ${SYS_DNS_ZONES}' },
    status: 400,
    code: 'undefined-variable',
    message:
      'Cannot use the value of data as a variable expression: variable SYS_DNS_ZONES is not defined (it takes an index: SYS_DNS_ZONES[name]) at position 7 (/v1/config/volga/webhooks/b1)',
    at: { path: 'data' },
  },
  {
    name: 'a variable named as an indexed built-in',
    body: {
      ...hook,
      variables: [{ name: 'SYS_SITE_LABELS', 'value-from-message': { 'json-pointer': '/payload' } }],
    },
    status: 400,
    code: 'duplicate-variable',
    at: { path: 'variables[0]/name' },
  },
  {
    name: 'bad label expression',
    body: { ...hook, 'site-placement': { 'match-site-labels': 'zone = ' } },
    status: 400,
    code: 'syntax',
    at: { path: 'site-placement/match-site-labels', position: 7 },
  },
  {
    name: 'x- field in a single-resource body',
    body: { ...hook, 'x-etag': '"a"' },
    status: 400,
    code: 'x-field',
    at: { path: 'x-etag' },
  },
  {
    name: 'bad name in the path',
    path: '/v1/config/volga/webhooks/Bad_Name',
    body: { ...hook, name: 'Bad_Name' },
    status: 400,
    code: 'schema-pattern',
    at: { path: 'name' },
  },
  {
    name: 'name too long',
    path: `/v1/config/volga/webhooks/${'a'.repeat(254)}`,
    body: { ...hook, name: 'a'.repeat(254) },
    status: 400,
    code: 'schema-maxLength',
    at: { path: 'name' },
  },
  {
    name: 'POST with a bad name',
    method: 'POST',
    path: '/v1/config/volga/webhooks',
    body: { ...hook, name: '-x' },
    status: 400,
    code: 'schema-pattern',
    at: { path: 'name' },
  },
  // A name that makes no path of the list: a slash, or a dot-segment (it named the list or its parent).
  ...(['a/b', '..', '.'] as const).map((name) => ({
    name: `POST with the name ${name}`,
    method: 'POST',
    path: '/v1/config/volga/webhooks',
    body: { ...hook, name },
    status: 400,
    code: 'bad-name',
    at: { path: 'name' },
  })),
  {
    name: 'POST with a name that is not a string',
    method: 'POST',
    path: '/v1/config/volga/webhooks',
    body: { ...hook, name: 5 },
    status: 400,
    code: 'schema-type',
    at: { path: 'name' },
  },
  {
    name: 'POST without a name',
    method: 'POST',
    path: '/v1/config/volga/webhooks',
    body: { ...hook, name: undefined },
    status: 400,
    code: 'schema-required',
    at: { path: 'name' },
  },
  {
    name: 'encoded slash in a name',
    path: '/v1/config/volga/webhooks/a%2Fb',
    body: hook,
    status: 404,
    code: 'unknown-path',
  },
  { name: 'unknown query parameter', path: `${HOOK}?force=true`, body: hook, status: 400, code: 'unknown-parameter' },
  {
    name: 'duplicate query parameter',
    path: `${HOOK}?dry-run&dry-run`,
    body: hook,
    status: 400,
    code: 'duplicate-parameter',
  },
  {
    name: 'multi-object: the body is a string, not a list',
    method: 'PATCH',
    path: '/v1/config',
    raw: '"hello"',
    status: 400,
    code: 'not-an-object',
    message: 'Cannot use a string as the body: it must be a list of objects, each with x-path, or one such object',
  },
  {
    name: 'multi-object: an item is not an object',
    method: 'PATCH',
    path: '/v1/config',
    body: [{ 'x-path': HOOK, ...hook }, 5],
    status: 400,
    code: 'not-an-object',
    at: { index: 1 },
    message: 'Cannot use item 2: it is a number, not an object with x-path',
  },
  {
    name: 'multi-object: missing x-path',
    method: 'PATCH',
    path: '/v1/config',
    body: [{ 'x-path': HOOK, ...hook }, { name: 'z' }],
    status: 400,
    code: 'missing-x-path',
    at: { index: 1 },
  },
  {
    name: 'multi-object: bad x-operation',
    method: 'PATCH',
    path: '/v1/config',
    body: [{ 'x-path': HOOK, 'x-operation': 'upsert', ...hook }],
    status: 400,
    code: 'bad-x-operation',
    at: { index: 0 },
  },
  {
    name: 'multi-object: x-path outside /v1/config',
    method: 'POST',
    path: '/v1/config',
    body: [{ 'x-path': '/v1/state/applications/a' }],
    status: 400,
    code: 'x-path-outside',
    at: { index: 0 },
  },
  {
    name: 'multi-object: one bad object fails all',
    method: 'PATCH',
    path: '/v1/config',
    body: [
      { 'x-path': '/v1/config/applications/ok', name: 'ok' },
      { 'x-path': HOOK, ...hook, tries: -5 },
    ],
    status: 400,
    code: 'schema-minimum',
    at: { path: 'tries' },
  },
  {
    name: 'multi-object: body over the limit',
    method: 'PATCH',
    path: '/v1/config',
    raw: JSON.stringify([{ 'x-path': HOOK, ...hook, data: 'z'.repeat(LIMIT) }]),
    status: 413,
    code: 'body-too-large',
  },
];

function badInputSuite(backend: Backend): void {
  const t = suite(`api-bad-input (${backend})`);
  const api = useApi(t, backend, {
    db: 4,
    env: { MAX_BODY_BYTES: String(LIMIT) },
    setup: async (api) => {
      assert.is((await api.json('PUT', HOOK, { body: hook })).status, 201);
    },
  });

  /** The whole configuration with ETags: equal before and after means nothing was stored. */
  const snapshot = async () => {
    const res = await api.json('GET', '/v1/config?send-etag=true');
    assert.is(res.status, 200);
    return res.body;
  };

  for (const c of cases) {
    t(`${c.name} → ${c.status} ${c.code}, nothing stored`, async () => {
      const before = await snapshot();
      const method = c.method ?? 'PUT';
      const path = c.path ?? HOOK;
      const opts = {
        ...(c.raw !== undefined ? { raw: c.raw } : { body: c.body }),
        ...(c.type !== undefined ? { type: c.type } : {}),
        ...(c.headers ? { headers: c.headers } : {}),
      };
      const res = await api.json(method, path, opts);
      assert.is(res.status, c.status, JSON.stringify(res.body));
      const infos = infosOf(res.body);
      assert.not.ok(JSON.stringify(res.body).includes('hunter2'), 'the error does not quote the body');
      const at = infos.findIndex((i) => i.code === c.code);
      const hit = infos[at];
      assert.ok(hit, `expected ${c.code}: ${JSON.stringify(infos)}`);
      if (c.message !== undefined) assert.is(wireErrors(res.body)[at]?.['error-message'], c.message);
      if (c.errors !== undefined) assert.is(infos.length, c.errors, JSON.stringify(res.body));
      if (c.at?.path !== undefined) assert.is(hit?.path, c.at.path);
      if (c.at?.position !== undefined) assert.equal(hit?.position, c.at.position);
      if (c.at?.index !== undefined) assert.is(hit?.index, c.at.index);
      assert.equal(await snapshot(), before);
    });
  }

  t('validate and dry-run on a bad body report the same 400; on a good one they store nothing', async () => {
    const before = await snapshot();
    const bad = await api.json('PUT', `${HOOK}?validate`, { body: { ...hook, tries: -1 } });
    assert.is(bad.status, 400);
    assert.ok(infosOf(bad.body).some((i) => i.code === 'schema-minimum' && i.path === 'tries'));
    assert.is((await api.json('PUT', `${HOOK}?validate=true`, { body: { ...hook, tries: 2 } })).status, 204);
    const dry = await api.json('PUT', `${HOOK}?dry-run`, { body: { ...hook, tries: 2 } });
    assert.is(dry.status, 200);
    assert.ok(Array.isArray((dry.body as { 'impacted-resources'?: unknown })['impacted-resources']));
    assert.equal(await snapshot(), before);
  });

  t('several schema problems are all reported, each with its field', async () => {
    const res = await api.json('PUT', HOOK, { body: { ...hook, tries: -1, 'start-position': 'middle', extra: true } });
    assert.is(res.status, 400);
    const paths = infosOf(res.body)
      .map((i) => i.path)
      .sort();
    assert.equal(paths, ['extra', 'start-position', 'tries']);
  });

  t.run();
}

forEachBackend(badInputSuite);
