/**
 * HTTP details: OPTIONS and 405 on the login and token-refresh operations; weak comparison for
 * If-None-Match (RFC 9110), strong for If-Match; a `fields` output name given twice → 400;
 * empty 201/204 replies carry no content-type, also over real HTTP through @hono/node-server.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { startApi, type TestApi } from '../helpers/api.js';
import { spawnApiProc, type ApiProc } from '../helpers/api-proc.js';
import type { WireError } from '../helpers/assert.js';

type ErrorBody = { errors: WireError[] };

const t = suite('http-details');
let api: TestApi;
t.before(async () => {
  api = await startApi('embedded');
});
t.after(async () => {
  await api.close();
});

const SITE = '/v1/config/sites/d1';

t('OPTIONS /v1/login → 204 with Allow, no token needed; other methods → 405 with Allow', async () => {
  const res = await api.req('OPTIONS', '/v1/login', { headers: { authorization: '' } });
  assert.is(res.status, 204);
  assert.is(res.headers.get('allow'), 'POST, OPTIONS');
  for (const method of ['GET', 'PUT', 'PATCH', 'DELETE']) {
    const r = await api.json(method, '/v1/login', { headers: { authorization: '' } });
    assert.is(r.status, 405, method);
    assert.is(r.headers.get('allow'), 'POST, OPTIONS');
    assert.is((r.body as ErrorBody).errors[0]?.['error-info'], 'method-not-allowed');
  }
});

t('OPTIONS on token refresh → 204 with Allow; other methods → 405', async () => {
  const path = '/v1/state/strongbox/token/refresh';
  const res = await api.req('OPTIONS', path);
  assert.is(res.status, 204);
  assert.is(res.headers.get('allow'), 'POST, OPTIONS');
  for (const method of ['GET', 'PUT', 'DELETE']) {
    const r = await api.json(method, path);
    assert.is(r.status, 405, method);
    assert.is(r.headers.get('allow'), 'POST, OPTIONS');
  }
  assert.is((await api.req('OPTIONS', path, { headers: { authorization: '' } })).status, 401);
});

t('If-None-Match compares weakly (W/ matches), If-Match strongly', async () => {
  const put = await api.req('PUT', SITE, { body: { name: 'd1' } });
  assert.is(put.status, 201);
  const etag = put.headers.get('etag') ?? '';
  assert.match(etag, /^"/);
  const weak = `W/${etag}`;
  const notModified = await api.req('GET', SITE, { headers: { 'if-none-match': weak } });
  assert.is(notModified.status, 304);
  assert.is(notModified.headers.get('etag'), etag);
  assert.is((await api.req('GET', SITE, { headers: { 'if-none-match': `W/"other", ${weak}` } })).status, 304);
  assert.is((await api.req('GET', SITE, { headers: { 'if-none-match': 'W/"other"' } })).status, 200);
  // A write with If-None-Match uses the weak comparison too (RFC 9110 13.1.2).
  const again = await api.req('PUT', SITE, { body: { name: 'd1', type: 'hub' }, headers: { 'if-none-match': weak } });
  assert.is(again.status, 412);
  // If-Match stays strong: a weak tag never matches.
  const r = await api.req('PUT', SITE, { body: { name: 'd1', type: 'hub' }, headers: { 'if-match': weak } });
  assert.is(r.status, 412);
  assert.is(
    (await api.req('PUT', SITE, { body: { name: 'd1', type: 'hub' }, headers: { 'if-match': etag } })).status,
    204,
  );
});

t('fields=name=url,url → 400 naming the output field', async () => {
  assert.is((await api.req('PUT', '/v1/config/sites/d2', { body: { name: 'd2', type: 'edge' } })).status, 201);
  for (const [fields, position] of [
    ['name=type,type', 10],
    ['type,name=type', 5],
  ] as const) {
    const r = await api.json('GET', `/v1/config/sites/d2?fields=${encodeURIComponent(fields)}`);
    assert.is(r.status, 400, fields);
    const e = (r.body as ErrorBody).errors[0];
    assert.is(e?.['error-info'], 'duplicate-output');
    assert.is(e?.['error-details']?.position, position);
    assert.ok(e?.['error-message'].includes('type'), e?.['error-message']);
  }
});

t('empty 201 and 204 replies carry no content-type (app level)', async () => {
  const created = await api.req('POST', '/v1/config/sites', { body: { name: 'd3' } });
  assert.is(created.status, 201);
  assert.is(await created.text(), '');
  assert.is(created.headers.get('content-type'), null);
  const replaced = await api.req('PUT', '/v1/config/sites/d3', { body: { name: 'd3', type: 'hub' } });
  assert.is(replaced.status, 204);
  assert.is(replaced.headers.get('content-type'), null);
});

t.run();

const wire = suite('http-details over HTTP (@hono/node-server)');
let proc: ApiProc;
let token = '';
wire.before(async () => {
  proc = await spawnApiProc({
    ADMIN_PASSWORD: 'admin-password-1',
    DATA_DIR: mkdtempSync(join(tmpdir(), 'edgeplane-http-details-')),
  });
  const login = await fetch(`${proc.url}/v1/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'admin', password: 'admin-password-1' }),
  });
  token = ((await login.json()) as { token: string }).token;
});
wire.after(async () => {
  await proc.stop();
});

wire('201, 204 and 304 without a body have no content-type on the wire', async () => {
  const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  const created = await fetch(`${proc.url}/v1/config/sites`, {
    method: 'POST',
    headers: auth,
    body: JSON.stringify({ name: 'w1' }),
  });
  assert.is(created.status, 201);
  assert.is(created.headers.get('content-type'), null);
  const replaced = await fetch(`${proc.url}/v1/config/sites/w1`, {
    method: 'PUT',
    headers: auth,
    body: JSON.stringify({ name: 'w1', type: 'hub' }),
  });
  assert.is(replaced.status, 204);
  assert.is(replaced.headers.get('content-type'), null);
  const etag = replaced.headers.get('etag') ?? '';
  const notModified = await fetch(`${proc.url}/v1/config/sites/w1`, {
    headers: { authorization: auth.authorization, 'if-none-match': `W/${etag}` },
  });
  assert.is(notModified.status, 304);
  assert.is(notModified.headers.get('content-type'), null);
  const read = await fetch(`${proc.url}/v1/config/sites/w1`, { headers: { authorization: auth.authorization } });
  assert.is(read.headers.get('content-type'), 'application/json');
  const options = await fetch(`${proc.url}/v1/login`, { method: 'OPTIONS' });
  assert.is(options.status, 204);
  assert.is(options.headers.get('content-type'), null);
  const deleted = await fetch(`${proc.url}/v1/config/sites/w1`, { method: 'DELETE', headers: auth });
  assert.is(deleted.status, 204);
  assert.is(deleted.headers.get('content-type'), null);
});

wire.run();
