/**
 * A site token can do nothing but sync its own site. The list of routes is the server's own
 * OpenAPI document (which test/ops/openapi.test.ts proves equal to the routes the server
 * answers, both ways): every method of every path, with the path parameters filled in, is
 * called with a site token and must answer 401 or 403, never a success. The public paths
 * (login, probes, metrics, the document) answer the same with a site token as with no token at
 * all: the token adds nothing. The site's own routes (sync, ack, report, answer) work; another
 * site's answer 403; run on both stores.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { generateSiteKey } from '../../src/secrets/sealed.js';
import { publicPaths } from '../../src/api/route-table.js';
import { startApi, type TestApi } from '../helpers/api.js';
import { forEachBackend } from '../helpers/backends.js';

type Doc = { paths: Record<string, Record<string, unknown>> };
const methods = ['get', 'put', 'post', 'patch', 'delete', 'options', 'head'];

/** Fills each {param} of a template: the site's own name for {name}, a plausible name elsewhere. */
const concrete = (template: string, site: string) =>
  template.replace(/\{([^}]+)\}/g, (_, p: string) => (p === 'name' ? site : 'probe-x'));

/** A body a write would accept in shape, so a refusal can only come from the token. */
const bodyFor = (path: string): unknown =>
  path.endsWith('/produce') ? { payload: 'x' } : path.endsWith('/unseal') ? { key: 'x' } : { name: 'site-a' };

async function setUp(api: TestApi): Promise<{ a: string; b: string }> {
  for (const name of ['site-a', 'site-b']) {
    const r = await api.json('PUT', `/v1/config/sites/${name}`, { body: { name } });
    assert.is(r.status, 201, JSON.stringify(r.body));
  }
  const issue = async (name: string) => {
    const r = await api.json('POST', `/v1/state/sites/${name}/issue-token`);
    assert.is(r.status, 201, JSON.stringify(r.body));
    return (r.body as { token: string }).token;
  };
  return { a: await issue('site-a'), b: await issue('site-b') };
}

/** Every event of the audit topic so far (read as a group of the test's own). */
async function auditEvents(api: TestApi): Promise<Array<{ method: string; path: string; status: number }>> {
  const { bus } = api.instance.deps;
  const group = `audit-reader-${Math.random().toString(36).slice(2)}`;
  await bus.ensureGroup('system:audit-trail-log', group, { at: 'beginning' });
  const read = await bus.read('system:audit-trail-log', group, 'test', { cursor: '>', count: 10_000 });
  return read.entries.map(
    (e) => JSON.parse(String(e.fields.payload)) as { method: string; path: string; status: number },
  );
}

forEachBackend((backend) => {
  test(`${backend}: a site token on every route of the OpenAPI document → 401/403, never a success`, async () => {
    const api = await startApi(backend);
    try {
      const tokens = await setUp(api);
      const asSite = { authorization: `Bearer ${tokens.a}` };
      const doc = (await api.json('GET', '/v1/openapi.json', { headers: { authorization: '' } })).body as Doc;
      const own = new Set(['sync', 'ack', 'report', 'answer'].map((route) => `/v1/fleet/sites/{name}/${route}`));
      let tried = 0;
      const wrong: string[] = [];
      for (const [template, ops] of Object.entries(doc.paths)) {
        if (own.has(template)) continue;
        for (const method of methods.filter((m) => m in ops).map((m) => m.toUpperCase())) {
          const path = concrete(template, 'site-a');
          const body = ['PUT', 'POST', 'PATCH'].includes(method) ? bodyFor(path) : undefined;
          const withSite = await api.req(method, path, {
            headers: asSite,
            ...(body !== undefined ? { body } : {}),
          });
          await withSite.body?.cancel();
          tried++;
          if (publicPaths.has(template)) {
            // Public by design: the site token changes nothing about the answer.
            const without = await api.req(method, path, {
              headers: { authorization: '' },
              ...(body !== undefined ? { body } : {}),
            });
            await without.body?.cancel();
            if (withSite.status !== without.status)
              wrong.push(`${method} ${path}: ${withSite.status} with a site token, ${without.status} without`);
            continue;
          }
          if (method === 'OPTIONS') {
            // OPTIONS answers the Allow list to anyone (no data); a site token must not change it.
            const without = await api.req(method, path, { headers: { authorization: '' } });
            if (withSite.status !== without.status || withSite.headers.get('allow') !== without.headers.get('allow'))
              wrong.push(`OPTIONS ${path}: ${withSite.status} with a site token, ${without.status} without`);
            continue;
          }
          if (withSite.status !== 401 && withSite.status !== 403) wrong.push(`${method} ${path}: ${withSite.status}`);
        }
      }
      assert.ok(tried > 40, `the document lists the server's routes (${tried} calls)`);
      assert.equal(wrong, [], 'every route refuses a site token');
      // A path the document does not list is no way in either.
      const unknown = await api.req('GET', '/v1/no/such/route', { headers: asSite });
      assert.ok(unknown.status === 401 || unknown.status === 403, `unknown route: ${unknown.status}`);
    } finally {
      await api.close();
    }
  });

  test(`${backend}: a site token syncs its own site only; another site's stream and ack → 403`, async () => {
    const api = await startApi(backend);
    try {
      const tokens = await setUp(api);
      const as = (t: string) => ({ authorization: `Bearer ${t}` });
      const mine = await api.req('GET', '/v1/fleet/sites/site-a/sync', {
        headers: { ...as(tokens.a), 'x-edgeplane-site-key': generateSiteKey().publicKey },
      });
      assert.is(mine.status, 200);
      assert.match(mine.headers.get('content-type') ?? '', /text\/event-stream/);
      await mine.body?.cancel();
      const other = await api.req('GET', '/v1/fleet/sites/site-b/sync', { headers: as(tokens.a) });
      assert.is(other.status, 403);
      const otherAck = await api.req('POST', '/v1/fleet/sites/site-b/ack', {
        headers: as(tokens.a),
        body: { version: '1-0' },
      });
      assert.is(otherAck.status, 403);
      const body = (await otherAck.json()) as { errors: Array<{ 'error-info': string }> };
      assert.is(body.errors[0]!['error-info'], 'other-site');
      for (const route of ['report', 'answer']) {
        const res = await api.req('POST', `/v1/fleet/sites/site-b/${route}`, { headers: as(tokens.a), body: {} });
        assert.is(res.status, 403, `another site's ${route}`);
        await res.body?.cancel();
      }
      // A user token is not a site token, and no token is none.
      assert.is((await api.req('GET', '/v1/fleet/sites/site-a/sync')).status, 401);
      assert.is((await api.req('GET', '/v1/fleet/sites/site-a/sync', { headers: { authorization: '' } })).status, 401);
      const ack = await api.req('POST', '/v1/fleet/sites/site-a/ack', {
        headers: as(tokens.a),
        body: { version: '1-0' },
      });
      assert.is(ack.status, 204);
      // A body on issue-token (or on a rollout operation) is a 400 and revokes nothing.
      const bad = await api.req('POST', '/v1/state/sites/site-a/issue-token', { raw: '{bad' });
      assert.is(bad.status, 400);
      await bad.body?.cancel();
      const withTtl = await api.json('POST', '/v1/state/sites/site-a/issue-token', { body: { ttl: 5 } });
      assert.is(withTtl.status, 400);
      assert.is((withTtl.body as { errors: Array<{ 'error-info': string }> }).errors[0]!['error-info'], 'no-body');
      const dry = await api.json('POST', '/v1/state/sites/site-a/issue-token?dry-run');
      assert.is((dry.body as { errors: Array<{ 'error-info': string }> }).errors[0]!['error-info'], 'no-dry-run');
      const abort = await api.req('POST', '/v1/state/volga/webhooks/x/rollout/abort', { raw: '{"x":' });
      assert.is(abort.status, 400);
      await abort.body?.cancel();
      // What sites send: the version in the query, no body.
      const byQuery = await api.req('POST', '/v1/fleet/sites/site-a/ack?version=1-1', { headers: as(tokens.a) });
      assert.is(byQuery.status, 204);
      // The refused writes of these routes are audited as every refused write is; accepted ones are not.
      const audit = await auditEvents(api);
      const seen = (method: string, path: string, status: number) =>
        audit.some((e) => e.method === method && e.path === path && e.status === status);
      assert.ok(seen('POST', '/v1/fleet/sites/site-b/ack', 403), 'a refused ack is audited');
      assert.ok(seen('POST', '/v1/fleet/sites/site-b/report', 403), 'a refused report is audited');
      assert.not.ok(
        audit.some((e) => e.path === '/v1/fleet/sites/site-a/ack'),
        'accepted acks are not',
      );
      assert.not.ok(
        audit.some((e) => e.method === 'GET'),
        'reads are not',
      );
      // A version past the head of the site's log was never sent: 400, not recorded.
      const beyond = await api.json('POST', '/v1/fleet/sites/site-a/ack?version=99999999999999-0', {
        headers: as(tokens.a),
      });
      assert.is(beyond.status, 400, JSON.stringify(beyond.body));
      assert.is((beyond.body as { errors: Array<{ 'error-info': string }> }).errors[0]!['error-info'], 'bad-value');
      const state = await api.req('GET', '/v1/state/sites/site-a');
      assert.is(((await state.json()) as Record<string, unknown>)['config-version'], '1-1');
      for (const [query, code] of [
        ['?version=x', 'schema-required'],
        ['?version=1-2&and=more', 'unknown-parameter'],
        ['', 'schema-required'],
      ] as const) {
        const bad = await api.req('POST', `/v1/fleet/sites/site-a/ack${query}`, { headers: as(tokens.a) });
        assert.is(bad.status, 400, query);
        const e = (await bad.json()) as { errors: Array<{ 'error-info': string }> };
        assert.is(e.errors[0]!['error-info'], code, query);
      }
    } finally {
      await api.close();
    }
  });
  test(`${backend}: a stream of the site opened with another key ends the one before (its site reconnects with its own key)`, async () => {
    const api = await startApi(backend, { env: { FLEET_KEEPALIVE: '200ms' } });
    try {
      const tokens = await setUp(api);
      const open = (key: string) =>
        api.req('GET', '/v1/fleet/sites/site-a/sync', {
          headers: { authorization: `Bearer ${tokens.a}`, 'x-edgeplane-site-key': key },
        });
      // Reads a stream until it ends (true) or `ms` pass (false).
      const endsWithin = async (res: Response, ms: number) => {
        const reader = res.body!.getReader();
        const deadline = Date.now() + ms;
        for (let i = 0; i < 1000 && Date.now() < deadline; i++) {
          const next = await Promise.race([
            reader.read(),
            new Promise<'later'>((r) => setTimeout(() => r('later'), Math.max(1, deadline - Date.now()))),
          ]);
          if (next === 'later') break;
          if (next.done) return true;
        }
        await reader.cancel();
        return false;
      };
      const first = await open(generateSiteKey().publicKey);
      assert.is(first.status, 200);
      // A second process with the same token and a key of its own (its secrets are sealed for that key now).
      const key2 = generateSiteKey().publicKey;
      const second = await open(key2);
      assert.is(second.status, 200);
      assert.ok(await endsWithin(first, 10_000), 'the stream opened with the older key ends');
      assert.not.ok(await endsWithin(second, 1_000), 'the stream of the key recorded last goes on');
      // The site deleted: its open stream ends, its token is refused, and stays so when a site
      // of that name is made again (it needs a token of its own).
      const third = await open(key2);
      assert.is(third.status, 200);
      assert.is((await api.json('DELETE', '/v1/config/sites/site-a')).status, 204);
      assert.ok(await endsWithin(third, 10_000), 'the stream of a deleted site ends');
      const ack = await api.json('POST', '/v1/fleet/sites/site-a/ack?version=1-0', {
        headers: { authorization: `Bearer ${tokens.a}` },
      });
      assert.is(ack.status, 401, JSON.stringify(ack.body));
      assert.is((await api.json('PUT', '/v1/config/sites/site-a', { body: { name: 'site-a' } })).status, 201);
      const again = await api.json('POST', '/v1/fleet/sites/site-a/ack?version=1-0', {
        headers: { authorization: `Bearer ${tokens.a}` },
      });
      assert.is(again.status, 401, 'the old token stays revoked');
    } finally {
      await api.close();
    }
  });
});

test.run();
