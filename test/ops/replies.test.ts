/**
 * The OpenAPI document describes what the server really answers: a representative set of
 * requests reaches every operation of the document (each resource's config and state routes,
 * the fixed routes, the fleet's site routes, OPTIONS on every path, with and without a token),
 * and every reply is checked against the document with ajv (draft 2020-12): status declared,
 * content type declared, body matching its schema (helpers/openapi-check.ts).
 *
 * Replies recorded by other suites (EDGEPLANE_RECORD_REPLIES=<dir> while they run) are checked
 * the same way when EDGEPLANE_CHECK_REPLIES=<dir> names them.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { generateSiteKey } from '../../src/secrets/sealed.js';
import { startApi } from '../helpers/api.js';
import { recordedReplies, replyChecker, type RecordedReply } from '../helpers/openapi-check.js';

const api = await startApi('embedded');

type Doc = Parameters<typeof replyChecker>[0];
const doc = (await api.json('GET', '/v1/openapi.json', { headers: { authorization: '' } })).body as Doc;
const check = replyChecker(doc);

const seen = new Map<string, number>();
const problems: string[] = [];
let checked = 0;
/** Replies that belong to an operation (the rest: no route, or 405). */
let matched = 0;

function verify(r: RecordedReply): void {
  const out = check(r);
  checked++;
  if (out.operation) {
    matched++;
    seen.set(out.operation, (seen.get(out.operation) ?? 0) + 1);
  }
  if (out.problem) problems.push(`${r.method} ${r.path} → ${r.status}: ${out.problem}`);
}

type Opts = { body?: unknown; raw?: string; type?: string; headers?: Record<string, string> };

/** Sends a request and checks its reply; an event stream's body is not read (it does not end). */
async function call(method: string, path: string, opts: Opts = {}): Promise<Response> {
  const res = await api.req(method, path, opts);
  const contentType = res.headers.get('content-type');
  let body = '';
  if (contentType?.startsWith('text/event-stream')) await res.body?.cancel();
  else body = await res.clone().text();
  verify({ method, path, status: res.status, contentType, body });
  return res;
}

const yaml = { accept: 'application/yaml' };

/** One object of each resource (in dependency order), and a change each accepts. */
const cases: Array<{ list?: string; path: string; create: Record<string, unknown>; patch: Record<string, unknown> }> = [
  {
    list: 'volga/webhooks',
    path: 'volga/webhooks/w1',
    create: {
      name: 'w1',
      topics: ['t1'],
      'site-placement': { 'all-sites': true },
      url: 'http://127.0.0.1:9/${TOPIC}',
      data: '${MSG}',
    },
    patch: { tries: 3 },
  },
  {
    list: 'applications',
    path: 'applications/a1',
    create: { name: 'a1', version: '1.0', services: [{ name: 'web', image: 'nginx' }] },
    patch: { version: '1.1' },
  },
  {
    list: 'application-deployments',
    path: 'application-deployments/d1',
    create: {
      name: 'd1',
      'application-name': 'a1',
      'application-version': '1.0',
      placement: { 'match-site-labels': 'zone = north' },
    },
    patch: { 'application-version': '1.1' },
  },
  {
    list: 'sites',
    path: 'sites/s1',
    create: { name: 's1', type: 'edge', labels: { zone: 'north' } },
    patch: { labels: { zone: 'south' } },
  },
  { path: 'system/settings', create: { 'default-domain': 'corp.example' }, patch: { 'default-domain': 'e.example' } },
  {
    list: 'system/dns-zones',
    path: 'system/dns-zones/z1',
    create: { name: 'z1', domain: 'z1.example' },
    patch: { domain: 'z1.example.org' },
  },
  { list: 'strongbox/vaults', path: 'strongbox/vaults/v1', create: { name: 'v1' }, patch: { description: 'vault' } },
  {
    list: 'strongbox/vaults/v1/secrets',
    path: 'strongbox/vaults/v1/secrets/s1',
    create: { name: 's1', data: { user: 'u1' } },
    patch: { data: { pass: 'p1' } },
  },
  {
    list: 'system/policies',
    path: 'system/policies/p1',
    create: { name: 'p1', rules: [{ path: '/v1/config/applications/**', operations: ['read'], effect: 'allow' }] },
    patch: { rules: [{ path: '/v1/state/**', operations: ['read'], effect: 'allow' }] },
  },
  {
    list: 'system/users',
    path: 'system/users/u1',
    create: { name: 'u1', password: 'a-long-password', policies: ['p1'] },
    patch: { policies: ['p1'] },
  },
  { list: 'system/tenants', path: 'system/tenants/t1', create: { name: 't1' }, patch: { description: 'tenant' } },
];

/** Fills each {param} of a template. */
const concrete = (template: string) =>
  template.replace(/\{([^}]+)\}/g, (_, p: string) => (p === 'file' ? 'app.css' : p === 'name' ? 's1' : 'probe-x'));

test('every reply of every operation matches the document', async () => {
  // The fixed routes that need no object.
  for (const p of ['/healthz', '/readyz', '/metrics', '/v1/openapi.json', '/v1/openapi.yaml', '/ui', '/ui/'])
    await call('GET', p, { headers: { authorization: '' } });
  await call('GET', '/ui/app.css', { headers: { authorization: '' } });
  await call('GET', '/ui/no-such-file', { headers: { authorization: '' } });
  await call('POST', '/v1/login', { body: { username: 'admin', password: 'admin-password-1' }, headers: yaml });
  await call('POST', '/v1/login', { body: { username: 'admin', password: 'wrong-password' } });
  await call('POST', '/v1/login', { body: { username: 'admin' } });
  await call('GET', '/v1/openapi.json?x=1', { headers: { authorization: '' } });
  await call('POST', '/v1/strongbox/init');
  await call('POST', '/v1/strongbox/unseal', { body: { key: 'not-the-key' } });

  // Each resource: created, read every way, changed, its state read.
  for (const c of cases) {
    const item = `/v1/config/${c.path}`;
    if (c.list) {
      await call('POST', `/v1/config/${c.list}?validate`, { body: c.create });
      await call('POST', `/v1/config/${c.list}?dry-run`, { body: c.create });
      const created = await call('POST', `/v1/config/${c.list}`, { body: c.create });
      assert.is(created.status, 201, `${c.path}: ${await created.text()}`);
      await call('POST', `/v1/config/${c.list}`, { body: c.create }); // 409
      for (const q of ['', '?count', '?keys', '?fields=name', '?where=name%3D%22none%22', '?with-defaults'])
        await call('GET', `/v1/config/${c.list}${q}`);
      await call('GET', `/v1/config/${c.list}`, { headers: yaml });
      await call('GET', `/v1/config/${c.list}?watch`);
      await call('GET', `/v1/config/${c.list}?bad-parameter`);
      for (const q of ['', '?count', '?keys', '?fields=name', '?content=nonconfig', '?content=config'])
        await call('GET', `/v1/state/${c.list}${q}`);
      await call('GET', `/v1/state/${c.list}`, { headers: yaml });
      await call('GET', `/v1/state/${c.list}/no-such-object`);
    } else {
      await call('PUT', `${item}?validate`, { body: c.create });
      await call('PUT', `${item}?dry-run`, { body: c.create });
      await call('PUT', item, { body: c.create });
    }
    const read = await call('GET', item);
    const etag = read.headers.get('etag') ?? '';
    await call('GET', item, { headers: { 'if-none-match': etag } });
    await call('GET', item, { headers: { 'if-match': '"other"' } });
    for (const q of ['?fields=name', '?with-defaults', '?with-defaults=trim']) await call('GET', `${item}${q}`);
    await call('GET', item, { headers: yaml });
    await call('GET', `${item}?watch`);
    await call('PATCH', item, { body: c.patch });
    await call('PATCH', `${item}?dry-run`, { body: c.patch });
    await call('PATCH', item, {
      raw: JSON.stringify([{ op: 'test', path: '/nope', value: 1 }]),
      type: 'application/json-patch+json',
    });
    await call('PUT', item, { body: { ...c.create, ...c.patch } });
    await call('PUT', item, { body: { ...c.create, 'no-such-member': 1 } });
    for (const q of ['', '?fields=name', '?content=nonconfig', '?content=config', '?with-defaults'])
      await call('GET', `/v1/state/${c.path}${q}`);
    await call('GET', `/v1/state/${c.path}`, { headers: yaml });
    await call('GET', `/v1/state/${c.path}?watch`);
    // No rollout to act on: 409 (and 404 for an object that does not exist).
    for (const verb of ['resume', 'abort']) await call('POST', `/v1/state/${c.path}/rollout/${verb}`);
    await call('POST', `/v1/state/${c.path}-none/rollout/abort`);
  }

  // The whole trees and multi-object writes.
  for (const q of ['', '?send-etag', '?fields=name', '?include-tenant-config', '?match-path=/v1/config/sites/*'])
    await call('GET', `/v1/config${q}`);
  await call('GET', '/v1/config', { headers: yaml });
  await call('GET', '/v1/config?watch');
  const multi = [{ 'x-path': '/v1/config/system/dns-zones/z2', name: 'z2', domain: 'z2.example' }];
  await call('POST', '/v1/config?dry-run', { body: multi });
  await call('POST', '/v1/config?validate', { body: multi });
  await call('POST', '/v1/config', { body: multi });
  await call('PATCH', '/v1/config', { body: { 'x-path': '/v1/config/system/dns-zones/z2', 'x-operation': 'delete' } });
  await call('PATCH', '/v1/config', { body: { 'x-path': '/v1/config/no/such' } });
  for (const q of ['', '?fields=name', '?content=nonconfig', '?match-path=/v1/state/sites/*', '?site=elsewhere'])
    await call('GET', `/v1/state${q}`);
  await call('GET', '/v1/state?watch');

  // Topics, and an exporter's operations.
  await call('POST', '/v1/state/volga/topics/t1/produce', { body: { payload: { n: 1 }, 'producer-name': 'p' } });
  await call('POST', '/v1/state/volga/topics/t1/produce', { body: { nope: 1 } });
  for (const q of ['', '?count', '?keys', '?fields=name', '?where=length%3E0'])
    await call('GET', `/v1/state/volga/topics${q}`);
  await call('GET', '/v1/state/volga/topics', { headers: yaml });
  await call('GET', '/v1/state/volga/topics/t1');
  await call('GET', '/v1/state/volga/topics/t1?fields=name');
  await call('GET', '/v1/state/volga/topics/no-such-topic');
  await call('GET', '/v1/state/volga/webhooks/w1/history');
  await call('GET', '/v1/state/volga/webhooks/w1/attempts');
  await call('GET', '/v1/state/volga/webhooks/nope/attempts');
  await call('POST', '/v1/state/volga/webhooks/w1/rewind', { body: { to: 'beginning' } });
  await call('POST', '/v1/state/volga/webhooks/w1/rewind', { body: { to: 'someday' } });
  await call('POST', '/v1/state/volga/webhooks/w1/restart');
  await call('GET', '/v1/state/strongbox/vaults/v1/secrets/s1');

  // The configuration history and rollback.
  for (const q of ['', '?count', '?fields=revision,user', '?where=revision%3E0', '?limit=1'])
    await call('GET', `/v1/state/config-revisions${q}`);
  await call('GET', '/v1/state/config-revisions', { headers: yaml });
  const newest = ((await (await call('GET', '/v1/state/config-revisions')).json()) as Array<{ revision: number }>)[0];
  await call('GET', `/v1/state/config-revisions/${newest?.revision ?? 1}`);
  await call('GET', '/v1/state/config-revisions/999999');
  await call('GET', '/v1/state/config-revisions/abc');
  await call('POST', '/v1/config/rollback?dry-run', { body: { to: newest?.revision ?? 1 } });
  await call('POST', '/v1/config/rollback?validate', { body: { to: newest?.revision ?? 1 } });
  await call('POST', '/v1/config/rollback', { body: { to: newest?.revision ?? 1 } });
  await call('POST', '/v1/config/rollback', { body: { to: 'abc' } });
  await call('POST', '/v1/config/rollback', { body: { to: 999999 } });

  // The fleet: a site's token, then the site's own routes.
  const issued = await call('POST', '/v1/state/sites/s1/issue-token');
  const token = ((await issued.json()) as { token: string }).token;
  const asSite = { authorization: `Bearer ${token}` };
  const sync = await call('GET', '/v1/fleet/sites/s1/sync', {
    headers: { ...asSite, 'x-edgeplane-site-key': generateSiteKey().publicKey },
  });
  assert.is(sync.status, 200);
  await call('GET', '/v1/fleet/sites/s1/sync', { headers: asSite });
  await call('GET', '/v1/fleet/sites/s1/sync');
  // The same stream with the site's acknowledgements in the request's body.
  const withAcks = await call('POST', '/v1/fleet/sites/s1/sync', {
    headers: { ...asSite, 'x-edgeplane-site-key': generateSiteKey().publicKey },
    raw: '1-0\n',
    type: 'text/plain',
  });
  assert.is(withAcks.status, 200);
  await call('POST', '/v1/fleet/sites/s1/sync', { raw: '', type: 'text/plain' });
  await call('POST', '/v1/fleet/sites/s1/ack?version=1-0', { headers: asSite });
  await call('POST', '/v1/fleet/sites/s1/ack', { headers: asSite, body: { nope: 1 } });
  await call('POST', '/v1/fleet/sites/s1/report', { headers: asSite, body: { tenants: { root: [] } } });
  await call('POST', '/v1/fleet/sites/s1/report', { headers: asSite, body: { tenants: 1 } });
  await call('POST', '/v1/fleet/sites/s1/answer', { headers: asSite, body: { id: 'x', status: 200, body: {} } });
  await call('POST', '/v1/fleet/sites/s1/answer', { headers: asSite, body: { id: 'x' } });
  await call('GET', '/v1/state/sites/s1?site=s1');
  await call('GET', '/v1/state/sites?site=s1');

  // OPTIONS on every path, with the token and without.
  for (const template of Object.keys(doc.paths)) {
    const path = concrete(template);
    await call('OPTIONS', path);
    await call('OPTIONS', path, { headers: { authorization: '' } });
  }
  await call('POST', '/v1/state/strongbox/token/refresh');

  // Deleted, last first.
  for (const c of [...cases].reverse()) {
    await call('DELETE', `/v1/config/${c.path}?dry-run`);
    await call('DELETE', `/v1/config/${c.path}`);
  }
  await call('GET', '/v1/config/volga/webhooks/w1');

  assert.equal(problems, [], `${problems.length} of ${checked} replies do not match the document`);
  const operations = Object.entries(doc.paths).flatMap(([p, item]) =>
    Object.keys(item)
      .filter((m) => ['get', 'put', 'post', 'patch', 'delete', 'options'].includes(m))
      .map((m) => `${m.toUpperCase()} ${p}`),
  );
  const missed = operations.filter((o) => !seen.has(o));
  assert.equal(missed, [], 'operations no request reached');
  console.log(
    `${checked} replies (${matched} of operations) checked, ${operations.length} operations, every one reached`,
  );
});

test('replies recorded by other suites (EDGEPLANE_CHECK_REPLIES) match the document', () => {
  const dir = process.env.EDGEPLANE_CHECK_REPLIES;
  if (!dir) return;
  problems.length = 0;
  matched = 0;
  const replies = recordedReplies(dir);
  for (const r of replies) verify(r);
  console.log(`${replies.length} recorded replies (${matched} of operations) checked, ${problems.length} do not match`);
  assert.equal(problems, []);
});

test.after(() => api.close());
test.run();
