/**
 * The method table for LIST, LIST/NAME and OBJECT under /v1/config and the
 * read-only /v1/state mirror: status codes, Location, Allow, Accept-Patch, 404 and 405, and a
 * body whose name differs from the path's. Run against both stores (Redis DB 1).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { useApi } from '../helpers/api.js';
import { forEachBackend, type Backend } from '../helpers/backends.js';
import { firstProblem } from '../helpers/assert.js';

type ErrorInfo = { code?: string; path?: string; 'x-path'?: string };

/** The code and details of the first entry of an error body (asserting the body has that shape). */
function infoOf(body: unknown): ErrorInfo {
  return firstProblem(body) as ErrorInfo;
}

const hook = (name: string) => ({
  name,
  topics: ['t1'],
  'site-placement': { 'all-sites': true },
  url: 'http://example.test/hook',
  data: '${MSG}',
});

function crudSuite(backend: Backend): void {
  const t = suite(`api-crud (${backend})`);
  const api = useApi(t, backend, { db: 1 });

  t('LIST: POST creates → 201 with Location and ETag; a second POST → 409, store unchanged', async () => {
    const created = await api.json('POST', '/v1/config/applications', { body: { name: 'app1', version: '1.0' } });
    assert.is(created.status, 201);
    assert.is(created.headers.get('location'), '/v1/config/applications/app1');
    assert.match(created.headers.get('etag') ?? '', /^"[^"]+"$/);
    const got = await api.json('GET', '/v1/config/applications/app1');
    assert.is(got.status, 200);
    assert.equal(got.body, { name: 'app1', version: '1.0' });
    assert.is(got.headers.get('etag'), created.headers.get('etag'));
    const again = await api.json('POST', '/v1/config/applications', { body: { name: 'app1', version: '2.0' } });
    assert.is(again.status, 409);
    assert.is(infoOf(again.body).code, 'exists');
    const after = await api.json('GET', '/v1/config/applications/app1');
    assert.is(after.headers.get('etag'), created.headers.get('etag'));
    assert.equal(after.body, { name: 'app1', version: '1.0' });
  });

  t('LIST: GET lists items (keys, count); the list itself answers 405 to PUT, PATCH, DELETE', async () => {
    await api.json('PUT', '/v1/config/applications/app2', { body: { name: 'app2', version: '1' } });
    const list = await api.json('GET', '/v1/config/applications');
    assert.is(list.status, 200);
    assert.ok(Array.isArray(list.body));
    const names = (list.body as Array<{ name: string }>).map((x) => x.name).sort();
    assert.ok(names.includes('app1') && names.includes('app2'));
    const keys = await api.json('GET', '/v1/config/applications?keys=true');
    assert.equal((keys.body as string[]).slice().sort(), names);
    const count = await api.json('GET', '/v1/config/applications?count=true');
    assert.equal(count.body, { count: names.length });
    for (const method of ['PUT', 'PATCH', 'DELETE']) {
      const res = await api.json(method, '/v1/config/applications', method === 'DELETE' ? {} : { body: { name: 'x' } });
      assert.is(res.status, 405, method);
      assert.is(res.headers.get('allow'), 'GET, POST, OPTIONS', method);
      assert.is(infoOf(res.body).code, 'method-not-allowed');
    }
  });

  t('LIST/NAME: PUT 201 then 204; PATCH 204; DELETE 204; then GET 404; DELETE again 404', async () => {
    const path = '/v1/config/sites/s1';
    const put1 = await api.json('PUT', path, { body: { name: 's1', type: 'edge', labels: { zone: 'a' } } });
    assert.is(put1.status, 201);
    assert.is(put1.headers.get('location'), path);
    const put2 = await api.json('PUT', path, { body: { name: 's1', type: 'edge', labels: { zone: 'b' } } });
    assert.is(put2.status, 204);
    assert.not.equal(put2.headers.get('etag'), put1.headers.get('etag'));
    const patch = await api.json('PATCH', path, { body: { description: 'first site' } });
    assert.is(patch.status, 204);
    const got = await api.json('GET', path);
    assert.equal(got.body, { name: 's1', type: 'edge', labels: { zone: 'b' }, description: 'first site' });
    assert.is(got.headers.get('etag'), patch.headers.get('etag'));
    const del = await api.json('DELETE', path);
    assert.is(del.status, 204);
    const gone = await api.json('GET', path);
    assert.is(gone.status, 404);
    assert.is(infoOf(gone.body).code, 'missing');
    const delAgain = await api.json('DELETE', path);
    assert.is(delAgain.status, 404);
    assert.is(infoOf(delAgain.body).code, 'missing');
  });

  t('LIST/NAME: POST → 405 with Allow; PATCH of a missing item → 404', async () => {
    const post = await api.json('POST', '/v1/config/sites/s9', { body: { name: 's9' } });
    assert.is(post.status, 405);
    assert.is(post.headers.get('allow'), 'GET, PUT, PATCH, DELETE, OPTIONS');
    const patch = await api.json('PATCH', '/v1/config/sites/nope', { body: { description: 'x' } });
    assert.is(patch.status, 404);
    assert.is(infoOf(patch.body).code, 'missing');
    assert.is((await api.json('GET', '/v1/config/sites/nope')).status, 404);
    assert.is((await api.json('GET', '/v1/config/sites/s9')).status, 404);
  });

  t('OBJECT (system/settings): read before any write, PUT 201 then 204, PATCH 204, DELETE 204, POST 405', async () => {
    const path = '/v1/config/system/settings';
    const before = await api.json('GET', path);
    assert.is(before.status, 200, 'it exists in effect before its first write');
    assert.equal(before.body, {});
    const put1 = await api.json('PUT', path, { body: { 'default-domain': 'one.example' } });
    assert.is(put1.status, 201);
    const put2 = await api.json('PUT', path, { body: { 'default-domain': 'two.example' } });
    assert.is(put2.status, 204);
    assert.is((await api.json('PATCH', path, { body: { 'default-domain': 'three.example' } })).status, 204);
    const got = await api.json('GET', path);
    assert.is(got.status, 200);
    assert.equal(got.body, { 'default-domain': 'three.example' });
    const post = await api.json('POST', path, { body: { 'default-domain': 'x.example' } });
    assert.is(post.status, 405);
    assert.is(post.headers.get('allow'), 'GET, PUT, PATCH, DELETE, OPTIONS');
    assert.is((await api.json('DELETE', path)).status, 204);
    // Never written (again), it exists in effect: {} without an ETag, so no If-Match holds.
    const empty = await api.json('GET', path);
    assert.is(empty.status, 200);
    assert.equal(empty.body, {});
    assert.is(empty.headers.get('etag'), null);
    assert.is((await api.json('GET', path, { headers: { 'if-match': '*' } })).status, 412);
  });

  t('a body whose name differs from the path → 400 name-mismatch, nothing stored', async () => {
    const put = await api.json('PUT', '/v1/config/volga/webhooks/h1', { body: hook('h2') });
    assert.is(put.status, 400);
    assert.is(infoOf(put.body).code, 'name-mismatch');
    assert.is(infoOf(put.body).path, 'name');
    assert.is((await api.json('GET', '/v1/config/volga/webhooks/h1')).status, 404);
    assert.is((await api.json('GET', '/v1/config/volga/webhooks/h2')).status, 404);
    assert.is((await api.json('PUT', '/v1/config/volga/webhooks/h1', { body: hook('h1') })).status, 201);
    const before = (await api.json('GET', '/v1/config/volga/webhooks/h1')).headers.get('etag');
    const patch = await api.json('PATCH', '/v1/config/volga/webhooks/h1', { body: { name: 'other' } });
    assert.is(patch.status, 400);
    assert.is(infoOf(patch.body).code, 'name-mismatch');
    assert.is((await api.json('GET', '/v1/config/volga/webhooks/h1')).headers.get('etag'), before);
  });

  t('a PUT body without name takes the name of the path', async () => {
    assert.is((await api.json('PUT', '/v1/config/applications/app3', { body: { version: '3' } })).status, 201);
    assert.equal((await api.json('GET', '/v1/config/applications/app3')).body, { name: 'app3', version: '3' });
  });

  t('unknown paths → 404 unknown-path under /v1/config, /v1/state and /v1', async () => {
    for (const path of [
      '/v1/config/nothing',
      '/v1/config/applications/a/b',
      '/v1/config/system',
      '/v1/state/nothing/here',
      '/v1/elsewhere',
    ]) {
      const res = await api.json('GET', path);
      assert.is(res.status, 404, path);
      assert.is(infoOf(res.body).code, 'unknown-path', path);
    }
  });

  t('OPTIONS answers Allow, and Accept-Patch where PATCH is allowed', async () => {
    const cases: Array<[string, string, boolean]> = [
      ['/v1/config', 'GET, POST, PATCH, OPTIONS', true],
      ['/v1/config/applications', 'GET, POST, OPTIONS', false],
      ['/v1/config/applications/app1', 'GET, PUT, PATCH, DELETE, OPTIONS', true],
      ['/v1/config/system/settings', 'GET, PUT, PATCH, DELETE, OPTIONS', true],
      ['/v1/state', 'GET, OPTIONS', false],
      ['/v1/state/applications', 'GET, OPTIONS', false],
      ['/v1/state/applications/app1', 'GET, OPTIONS', false],
    ];
    for (const [path, allow, patch] of cases) {
      const res = await api.req('OPTIONS', path);
      assert.is(res.status, 204, path);
      assert.is(res.headers.get('allow'), allow, path);
      const ap = res.headers.get('accept-patch');
      if (patch) {
        assert.ok(ap?.includes('application/json-patch+json') && ap.includes('application/yaml'), `${path}: ${ap}`);
      } else assert.is(ap, null, path);
    }
  });

  t('/v1/config root: PUT and DELETE → 405 with Allow', async () => {
    for (const method of ['PUT', 'DELETE']) {
      const res = await api.json(method, '/v1/config');
      assert.is(res.status, 405, method);
      assert.is(res.headers.get('allow'), 'GET, POST, PATCH, OPTIONS');
    }
  });

  t('/v1/state mirrors the applied configuration and is read-only (405 with Allow)', async () => {
    const one = await api.json('GET', '/v1/state/applications/app1');
    assert.is(one.status, 200);
    assert.equal(one.body, { name: 'app1', version: '1.0' });
    const list = await api.json('GET', '/v1/state/applications');
    assert.is(list.status, 200);
    assert.ok((list.body as Array<{ name: string }>).some((x) => x.name === 'app1'));
    const all = await api.json('GET', '/v1/state');
    assert.is(all.status, 200);
    const paths = (all.body as Array<{ 'x-path': string }>).map((x) => x['x-path']);
    assert.ok(paths.includes('/v1/state/applications/app1'), JSON.stringify(paths));
    assert.ok(paths.includes('/v1/state/system/dns-zones/default'), JSON.stringify(paths));
    for (const [method, path] of [
      ['PUT', '/v1/state/applications/app1'],
      ['PATCH', '/v1/state/applications/app1'],
      ['DELETE', '/v1/state/applications/app1'],
      ['POST', '/v1/state/applications'],
      ['POST', '/v1/state'],
    ] as const) {
      const res = await api.json(method, path, method === 'DELETE' ? {} : { body: { name: 'app1' } });
      assert.is(res.status, 405, `${method} ${path}`);
      assert.is(res.headers.get('allow'), 'GET, OPTIONS', `${method} ${path}`);
    }
    const missing = await api.json('GET', '/v1/state/applications/nope');
    assert.is(missing.status, 404);
    assert.is(infoOf(missing.body).code, 'missing');
    assert.equal((await api.json('GET', '/v1/config/applications/app1')).body, { name: 'app1', version: '1.0' });
  });

  t('operations answer 405 with Allow: POST to other methods (restart, unseal)', async () => {
    for (const path of ['/v1/state/volga/webhooks/h1/restart', '/v1/strongbox/unseal']) {
      for (const method of ['GET', 'PUT', 'DELETE']) {
        const res = await api.json(method, path);
        assert.is(res.status, 405, `${method} ${path}`);
        assert.is(res.headers.get('allow'), 'POST, OPTIONS', `${method} ${path}`);
        assert.is(infoOf(res.body).code, 'method-not-allowed');
      }
      const opt = await api.req('OPTIONS', path);
      assert.is(opt.status, 204, path);
      assert.is(opt.headers.get('allow'), 'POST, OPTIONS', path);
    }
  });

  t('/v1/config GET lists every object with x-path; send-etag adds x-etag equal to the object ETag', async () => {
    const res = await api.json('GET', '/v1/config?send-etag=true');
    assert.is(res.status, 200);
    const items = res.body as Array<{ 'x-path': string; 'x-etag'?: string }>;
    const app1 = items.find((x) => x['x-path'] === '/v1/config/applications/app1');
    assert.ok(app1, JSON.stringify(items));
    assert.is(app1?.['x-etag'], (await api.json('GET', '/v1/config/applications/app1')).headers.get('etag'));
  });

  t.run();
}

forEachBackend(crudSuite);
