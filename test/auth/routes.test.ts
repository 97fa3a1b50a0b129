/**
 * The HTTP pieces on their own: authRoutes (login, refresh) and the guard (401 body and
 * WWW-Authenticate; an audit record of every write, refused ones too), mounted on a small
 * Hono app with the same error rendering as the real one.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { serve } from '@hono/node-server';
import { Hono } from 'hono';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parse as parseYaml } from 'yaml';
import { errorResponse } from '../../src/api/reply.js';
import { createAuth, type AuditEvent, type Principal } from '../../src/auth/index.js';
import { createGuard, guardRoutes } from '../../src/api/auth-middleware.js';
import { authRoutes } from '../../src/api/auth-routes.js';
import { ApiError } from '../../src/lib/errors.js';
import { openEmbeddedStore } from '../../src/store/embedded.js';
import { wireErrors, type WireError } from '../helpers/assert.js';

const dir = mkdtempSync(join(tmpdir(), 'edgeplane-auth-routes-'));
process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
const store = await openEmbeddedStore(dir);
const events: AuditEvent[] = [];
const auth = createAuth({
  settings: { tenant: 'default', tokenTtlSeconds: 120, adminPassword: 'route-admin-pw' },
  store,
  audit: async (e) => {
    events.push(e);
  },
});
await auth.bootstrap();

type Env = { Variables: { principal?: Principal } };
const renderError = (err: Error) =>
  errorResponse(err instanceof ApiError ? err : new ApiError('internal', 'internal'), 'json');
const guard = createGuard({ auth, audit: (e) => auth.audit(e), renderError });
const routes = new Hono<Env>();
routes.get('/v1/config/sites', (c) => c.json({ user: c.get('principal')?.user ?? null }));
routes.put('/v1/config/sites/s1', () => new Response(null, { status: 204 }));
const app = new Hono<Env>();
guardRoutes(app, [authRoutes(auth), routes], guard);
app.notFound(
  guard(() => {
    throw new ApiError('not-found', 'no such path', { code: 'unknown-path' });
  }),
);
app.onError(renderError);

const post = (path: string, body: string, headers: Record<string, string> = {}) =>
  app.request(path, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });

async function loginToken(): Promise<string> {
  const res = await post('/v1/login', JSON.stringify({ username: 'admin', password: 'route-admin-pw' }));
  assert.is(res.status, 200);
  const body: unknown = await res.json();
  assert.ok(typeof body === 'object' && body !== null && 'token' in body && typeof body.token === 'string');
  return body.token;
}

async function errorOf(res: Response): Promise<WireError> {
  const errors = wireErrors(await res.json());
  assert.is(errors.length, 1);
  const first = errors[0];
  if (!first) throw new Error('no error entry');
  return first;
}

test('POST /v1/login: JSON and YAML, token reply never cached', async () => {
  const res = await post('/v1/login', JSON.stringify({ username: 'admin', password: 'route-admin-pw' }));
  assert.is(res.status, 200);
  assert.is(res.headers.get('cache-control'), 'no-store');
  const body = (await res.json()) as Record<string, unknown>;
  assert.equal(Object.keys(body).sort(), ['creation-time', 'expires', 'expires-in', 'token']);
  assert.is(body['expires-in'], 120);
  const yaml = await post('/v1/login', 'username: admin\npassword: route-admin-pw\n', {
    'content-type': 'application/yaml',
    accept: 'application/yaml',
  });
  assert.is(yaml.status, 200);
  assert.is(yaml.headers.get('content-type'), 'application/yaml');
  const parsed: unknown = parseYaml(await yaml.text());
  assert.ok(typeof parsed === 'object' && parsed !== null && 'token' in parsed);
});

test('POST /v1/login: bad bodies are 400 naming the field; wrong password 401', async () => {
  const cases: Array<[string, number, string | undefined]> = [
    [JSON.stringify({ username: 'admin' }), 400, '/password'],
    [JSON.stringify({ username: 3, password: 'x' }), 400, '/username'],
    [JSON.stringify({ username: 'admin', password: 'x', tenant: 'y' }), 400, '/tenant'],
    [JSON.stringify(['admin']), 400, ''],
    ['{"username":', 400, undefined],
    [JSON.stringify({ username: 'admin', password: 'wrong-one' }), 401, '/v1/login'],
  ];
  for (const [body, status, path] of cases) {
    const res = await post('/v1/login', body);
    assert.is(res.status, status, body);
    const e = await errorOf(res);
    if (path !== undefined) assert.is(e['error-details']?.path, path, body);
  }
  const big = await post('/v1/login', JSON.stringify({ username: 'admin', password: 'x'.repeat(20_000) }));
  assert.is(big.status, 413);
  // One code for one rule: a body over the limit is body-too-large here as on every route.
  assert.is((await errorOf(big))['error-info'], 'body-too-large');
});

test('every other path needs a valid bearer token: 401 body with WWW-Authenticate', async () => {
  const attempts: Array<Record<string, string>> = [
    {},
    { authorization: 'Bearer nope' },
    { authorization: 'Basic YWRtaW46eA==' },
  ];
  for (const headers of attempts) {
    const res = await app.request('/v1/config/sites', { headers });
    assert.is(res.status, 401);
    assert.match(res.headers.get('www-authenticate') ?? '', /^Bearer/);
    const e = await errorOf(res);
    assert.ok(e['error-message'].length > 0 && typeof e['error-info'] === 'string');
  }
  const token = await loginToken();
  const ok = await app.request('/v1/config/sites', { headers: { authorization: `Bearer ${token}` } });
  assert.is(ok.status, 200);
  assert.equal(await ok.json(), { user: 'admin' });
});

test('POST /v1/state/strongbox/token/refresh: new token, the old one is refused', async () => {
  const token = await loginToken();
  assert.is((await post('/v1/state/strongbox/token/refresh', '', { authorization: 'Bearer x' })).status, 401);
  const res = await post('/v1/state/strongbox/token/refresh', '', { authorization: `Bearer ${token}` });
  assert.is(res.status, 200);
  const body = (await res.json()) as { token: string };
  assert.is.not(body.token, token);
  assert.is((await app.request('/v1/config/sites', { headers: { authorization: `Bearer ${token}` } })).status, 401);
  assert.is(
    (await app.request('/v1/config/sites', { headers: { authorization: `Bearer ${body.token}` } })).status,
    200,
  );
});

test('audit: every write is recorded (refused ones too), reads are not, logins once', async () => {
  events.length = 0;
  const token = await loginToken();
  await app.request('/v1/config/sites/s1', { method: 'PUT', headers: { authorization: `Bearer ${token}` } });
  await app.request('/v1/config/sites/s1', { method: 'PUT' });
  await app.request('/v1/config/sites', { headers: { authorization: `Bearer ${token}` } });
  assert.equal(
    events.map((e) => [e.user, e.method, e.path, e.status]),
    [
      ['admin', 'POST', '/v1/login', 200],
      ['admin', 'PUT', '/v1/config/sites/s1', 204],
      [null, 'PUT', '/v1/config/sites/s1', 401],
    ],
  );
  for (const e of events) assert.ok(!Number.isNaN(Date.parse(e.time)) && typeof e['client-address'] === 'string');
  assert.not.ok(JSON.stringify(events).includes(token));
});

test('an unknown path: 401 without a token, 404 with one; a write there is audited', async () => {
  events.length = 0;
  const token = await loginToken();
  assert.is((await app.request('/v1/nowhere')).status, 401);
  const missing = await app.request('/v1/nowhere', { headers: { authorization: `Bearer ${token}` } });
  assert.is(missing.status, 404);
  assert.is((await errorOf(missing))['error-info'], 'unknown-path');
  assert.is(
    (await app.request('/v1/nowhere', { method: 'DELETE', headers: { authorization: `Bearer ${token}` } })).status,
    404,
  );
  assert.equal(
    events.map((e) => [e.user, e.method, e.path, e.status]),
    [
      ['admin', 'POST', '/v1/login', 200],
      ['admin', 'DELETE', '/v1/nowhere', 404],
    ],
  );
});

test('over a real socket the client address is the TCP peer (X-Forwarded-For is not trusted)', async () => {
  events.length = 0;
  const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' });
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  try {
    const { port } = server.address() as AddressInfo;
    const res = await fetch(`http://127.0.0.1:${port}/v1/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': '203.0.113.9' },
      body: JSON.stringify({ username: 'admin', password: 'wrong-password' }),
    });
    assert.is(res.status, 401);
    await res.text();
  } finally {
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
  assert.match(events[0]?.['client-address'] ?? '', /127\.0\.0\.1$/);
});

test.after(async () => {
  auth.close();
  await store.close();
});

test.run();
