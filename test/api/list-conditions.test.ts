/**
 * Lists as seed §4.6 and CONTRACT §5 pin them: a list GET has an ETag that changes exactly when
 * a member is added, removed or changed, so If-Match on it answers 412 and If-None-Match 304;
 * If-Match is evaluated before If-None-Match (RFC 9110 13.2.2), on lists and single objects;
 * `validate` on a list GET checks every stored object against today's schemas and checks.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { useApi } from '../helpers/api.js';
import { forEachBackend, type Backend } from '../helpers/backends.js';
import { firstProblem } from '../helpers/assert.js';
import { configKey } from '../../src/store/keys.js';

const LIST = '/v1/config/applications';
const app = (name: string, version = '1') => ({ name, version });

function run(backend: Backend): void {
  const t = suite(`list conditions (${backend})`);
  const api = useApi(t, backend);

  const etagOf = async (path = LIST) => {
    const r = await api.req('GET', path);
    assert.is(r.status, 200);
    const etag = r.headers.get('etag');
    assert.ok(etag && /^"[^"]+"$/.test(etag), `a strong quoted ETag: ${etag}`);
    return etag;
  };

  t('a list ETag changes exactly when a member is added, changed or removed', async () => {
    const empty = await etagOf();
    assert.is(await etagOf(), empty, 'stable');
    assert.is((await api.json('POST', LIST, { body: app('a1') })).status, 201);
    const one = await etagOf();
    assert.is.not(one, empty, 'added');
    assert.is((await api.json('PUT', `${LIST}/a1`, { body: app('a1') })).status, 204);
    assert.is(await etagOf(), one, 'the same content written again');
    assert.is((await api.json('POST', LIST, { body: { name: 'bad', version: 3 } })).status, 400);
    assert.is(await etagOf(), one, 'a refused write');
    assert.is((await api.json('PATCH', `${LIST}/a1`, { body: { version: '2' } })).status, 204);
    const changed = await etagOf();
    assert.is.not(changed, one, 'changed');
    assert.is((await api.json('DELETE', `${LIST}/a1`)).status, 204);
    assert.is(await etagOf(), empty, 'removed: as before');
    // keys and count answer with the list's ETag too
    const k = await api.req('GET', `${LIST}?count`);
    assert.is(k.headers.get('etag'), empty);
  });

  t('If-Match on a list GET: 412 when stale, 200 when current; If-None-Match: 304', async () => {
    assert.is((await api.json('POST', LIST, { body: app('b1') })).status, 201);
    const etag = await etagOf();
    const stale = await api.json('GET', LIST, { headers: { 'if-match': '"stale"' } });
    assert.is(stale.status, 412);
    assert.is(firstProblem(stale.body).code, 'etag-mismatch');
    assert.is((await api.req('GET', LIST, { headers: { 'if-match': etag } })).status, 200);
    assert.is((await api.req('GET', LIST, { headers: { 'if-match': '*' } })).status, 200);
    const same = await api.req('GET', LIST, { headers: { 'if-none-match': etag } });
    assert.is(same.status, 304);
    assert.is(same.headers.get('etag'), etag);
    assert.is((await api.json('POST', LIST, { body: app('b2') })).status, 201);
    assert.is((await api.req('GET', LIST, { headers: { 'if-match': etag } })).status, 412);
    assert.is((await api.req('GET', LIST, { headers: { 'if-none-match': etag } })).status, 200);
  });

  t('If-Match before If-None-Match (RFC 9110): a failed If-Match is 412 even when If-None-Match matches', async () => {
    const item = await etagOf(`${LIST}/b1`);
    const one = await api.req('GET', `${LIST}/b1`, { headers: { 'if-match': '"other"', 'if-none-match': item } });
    assert.is(one.status, 412);
    const list = await etagOf();
    const all = await api.req('GET', LIST, { headers: { 'if-match': '"other"', 'if-none-match': list } });
    assert.is(all.status, 412);
    // both met: the If-None-Match decides (304)
    assert.is((await api.req('GET', LIST, { headers: { 'if-match': list, 'if-none-match': list } })).status, 304);
  });

  t(
    'If-Match on a POST to a list: 412 when stale (nothing created), 201 when current; on /v1/config itself only If-Match: * holds',
    async () => {
      const current = await etagOf();
      const stale = await api.json('POST', LIST, { body: app('p1'), headers: { 'if-match': '"not-it"' } });
      assert.is(stale.status, 412, JSON.stringify(stale.body));
      assert.is(firstProblem(stale.body).code, 'etag-mismatch');
      assert.is((await api.json('GET', `${LIST}/p1`)).status, 404, 'nothing created');
      assert.is((await api.json('POST', LIST, { body: app('p1'), headers: { 'if-match': current } })).status, 201);
      const exists = await api.json('POST', LIST, { body: app('p2'), headers: { 'if-none-match': '*' } });
      assert.is(exists.status, 412, 'If-None-Match: * on a list that exists');
      const multi = (headers: Record<string, string>) =>
        api.json('PATCH', '/v1/config', {
          body: [{ 'x-path': `${LIST}/p3`, version: '1' }],
          headers,
        });
      const tagged = await multi({ 'if-match': current });
      assert.is(tagged.status, 412, JSON.stringify(tagged.body));
      assert.match(JSON.stringify(tagged.body), /give x-etag on each object/);
      assert.is((await api.json('GET', `${LIST}/p3`)).status, 404, 'nothing written');
      assert.is((await multi({ 'if-none-match': '*' })).status, 412);
      assert.is((await multi({ 'if-match': '*' })).status, 204);
    },
  );

  t(
    'reads without an ETag (the whole /v1/config, /v1/state): If-Match * holds, another is 412; If-None-Match * is 304',
    async () => {
      assert.is((await api.json('POST', LIST, { body: app('c1') })).status, 201);
      for (const path of ['/v1/config', '/v1/state', '/v1/state/applications', '/v1/state/applications/c1']) {
        const cond = async (h: Record<string, string>) => (await api.json('GET', path, { headers: h })).status;
        assert.is(await cond({ 'if-match': '*' }), 200, `${path} If-Match *`);
        const refused = await api.json('GET', path, { headers: { 'if-match': '"x"' } });
        assert.is(refused.status, 412, `${path} If-Match "x"`);
        assert.is(firstProblem(refused.body).code, 'etag-mismatch');
        assert.is(await cond({ 'if-none-match': '*' }), 304, `${path} If-None-Match *`);
        assert.is(await cond({ 'if-none-match': '"x"' }), 200, `${path} If-None-Match "x"`);
      }
      // A state object that does not exist is still a 404, whatever If-None-Match says.
      assert.is(
        (await api.json('GET', '/v1/state/applications/nope', { headers: { 'if-none-match': '*' } })).status,
        404,
      );
      // A write to /v1/config itself with If-None-Match: * names the condition that matched.
      const w = await api.json('PATCH', '/v1/config', { headers: { 'if-none-match': '*' }, body: [] });
      assert.is(w.status, 412);
      assert.is(firstProblem(w.body).code, 'etag-match');
    },
  );

  t("validate on a list GET: every stored object checked against today's schemas and checks", async () => {
    const ok = await api.json('GET', `${LIST}?validate`);
    assert.is(ok.status, 200);
    assert.equal(ok.body, { valid: true, problems: [] });
    // An object stored by an older version whose rules have since changed: written into the
    // store directly, as no write through the API could store it today.
    const store = api.instance.deps.store;
    const tenant = api.instance.deps.settings.tenant;
    const res = await store.commit([
      { op: 'put', key: configKey(tenant, 'applications/old'), value: { name: 'old', version: 7, extra: true } },
    ]);
    assert.ok(res.ok);
    const bad = await api.json('GET', `${LIST}?validate=true`);
    assert.is(bad.status, 200);
    const body = bad.body as { valid: boolean; problems: Array<Record<string, unknown>> };
    assert.is(body.valid, false);
    const codes = body.problems.map((p) => `${p['x-path']} ${p['error-info']} ${JSON.stringify(p['error-details'])}`);
    assert.ok(codes.includes(`${LIST}/old schema-type {"path":"version"}`), codes.join('\n'));
    assert.ok(codes.includes(`${LIST}/old unknown-field {"path":"extra"}`), codes.join('\n'));
    for (const p of body.problems) assert.type(p['error-message'], 'string');
    assert.ok(
      body.problems.every((p) => p['x-path'] === `${LIST}/old`),
      'only the bad object',
    );
    // where selects what is validated
    const selected = await api.json('GET', `${LIST}?validate&where=${encodeURIComponent('name = "b1"')}`);
    assert.equal(selected.body, { valid: true, problems: [] });
    const conflict = await api.json('GET', `${LIST}?validate&count`);
    assert.is(conflict.status, 400);
    assert.is(firstProblem(conflict.body).code, 'conflicting-parameters');
  });

  t.run();
}

forEachBackend(run);
