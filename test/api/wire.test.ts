/**
 * Wire conventions: JSON/YAML negotiation for replies and error bodies, ETags on
 * every config object GET (strong, changing exactly with the content), If-Match /
 * If-None-Match → 412 / 304 on GET, PUT, PATCH, DELETE, and strict JSON (duplicate keys).
 * Both stores (Redis DB 2).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { parse as parseYaml, parseAllDocuments } from 'yaml';
import { useApi } from '../helpers/api.js';
import { forEachBackend, type Backend } from '../helpers/backends.js';
import { firstProblem } from '../helpers/assert.js';

function infoOf(body: unknown) {
  return firstProblem(body);
}

const APP = '/v1/config/applications/w1';

function wireSuite(backend: Backend): void {
  const t = suite(`api-wire (${backend})`);
  const api = useApi(t, backend, {
    db: 2,
    setup: async (api) => {
      assert.is((await api.json('PUT', APP, { body: { name: 'w1', version: '1' } })).status, 201);
      assert.is(
        (await api.json('PUT', '/v1/config/applications/w2', { body: { name: 'w2', version: '2' } })).status,
        201,
      );
    },
  });

  const etagOf = async (path: string) => (await api.req('GET', path)).headers.get('etag');

  t('JSON when Accept is absent, */* or application/json; YAML for the three YAML types', async () => {
    for (const accept of [undefined, '*/*', 'application/json', 'text/html, application/json;q=0.5']) {
      const res = await api.req('GET', APP, accept ? { headers: { accept } } : {});
      assert.is(res.status, 200, String(accept));
      assert.match(res.headers.get('content-type') ?? '', /^application\/json/, String(accept));
      assert.equal(JSON.parse(await res.text()), { name: 'w1', version: '1' });
    }
    for (const accept of [
      'application/yaml',
      'text/yaml',
      'application/x-yaml',
      'application/json;q=0.4, application/yaml',
    ]) {
      const res = await api.req('GET', APP, { headers: { accept } });
      assert.is(res.status, 200, accept);
      assert.match(res.headers.get('content-type') ?? '', /^application\/yaml/, accept);
      assert.equal(parseYaml(await res.text()), { name: 'w1', version: '1' });
    }
  });

  t('multi-object results: a JSON array, or YAML documents separated by ---', async () => {
    const json = await api.json('GET', '/v1/config/applications');
    assert.ok(Array.isArray(json.body));
    const res = await api.req('GET', '/v1/config/applications', { headers: { accept: 'application/yaml' } });
    const docs = parseAllDocuments(await res.text());
    const list = (Array.isArray(docs) ? docs : [docs]).map((d) => d.toJS() as { name: string });
    assert.equal(list.map((d) => d.name).sort(), ['w1', 'w2']);
    const all = await api.req('GET', '/v1/config', { headers: { accept: 'application/yaml' } });
    const allDocs = parseAllDocuments(await all.text());
    const paths = (Array.isArray(allDocs) ? allDocs : [allDocs]).map(
      (d) => (d.toJS() as { 'x-path': string })['x-path'],
    );
    assert.ok(paths.includes(APP), JSON.stringify(paths));
  });

  t('the error body is in the negotiated encoding; an unacceptable Accept → 406 in JSON', async () => {
    const res = await api.req('GET', '/v1/config/applications/none', { headers: { accept: 'application/yaml' } });
    assert.is(res.status, 404);
    assert.match(res.headers.get('content-type') ?? '', /^application\/yaml/);
    assert.is(infoOf(parseYaml(await res.text())).code, 'missing');
    const bad = await api.req('PUT', APP, { raw: '{"name": ', headers: { accept: 'text/yaml' } });
    assert.is(bad.status, 400);
    assert.is(infoOf(parseYaml(await bad.text())).code, 'syntax');
    const na = await api.req('GET', APP, { headers: { accept: 'text/html' } });
    assert.is(na.status, 406);
    assert.match(na.headers.get('content-type') ?? '', /^application\/json/);
    assert.is(infoOf(JSON.parse(await na.text())).code, 'not-acceptable');
    // text/* accepts text/yaml, the text type this API serves: YAML, not 406
    const text = await api.req('GET', APP, { headers: { accept: 'text/*' } });
    assert.is(text.status, 200);
    assert.match(text.headers.get('content-type') ?? '', /^application\/yaml/);
    assert.type((parseYaml(await text.text()) as { name?: unknown }).name, 'string');
  });

  t('request bodies by Content-Type: a YAML PUT is stored like its JSON twin', async () => {
    const res = await api.json('PUT', '/v1/config/applications/w3', {
      raw: 'name: w3\nversion: "3"\n',
      type: 'application/yaml',
    });
    assert.is(res.status, 201);
    assert.equal((await api.json('GET', '/v1/config/applications/w3')).body, { name: 'w3', version: '3' });
  });

  t('ETag on every config object GET: strong, quoted; changes exactly when the content changes', async () => {
    const first = await etagOf(APP);
    assert.match(first ?? '', /^"[^"]+"$/);
    assert.is(await etagOf(APP), first);
    const same = await api.json('PUT', APP, { body: { version: '1', name: 'w1' } });
    assert.is(same.status, 204);
    assert.is(await etagOf(APP), first, 'rewriting the same content keeps the ETag');
    assert.is((await api.json('PATCH', APP, { body: { version: '1b' } })).status, 204);
    const changed = await etagOf(APP);
    assert.not.equal(changed, first);
    await api.json('PATCH', APP, { body: { version: '1' } });
    assert.not.equal(await etagOf(APP), changed);
    assert.match((await etagOf('/v1/config/applications/w2')) ?? '', /^"[^"]+"$/);
  });

  t('GET: If-None-Match with the ETag → 304 with ETag; other ETag → 200; If-Match mismatch → 412', async () => {
    const etag = (await etagOf(APP)) ?? '';
    const notModified = await api.req('GET', APP, { headers: { 'if-none-match': etag } });
    assert.is(notModified.status, 304);
    assert.is(notModified.headers.get('etag'), etag);
    assert.is(await notModified.text(), '');
    assert.is((await api.req('GET', APP, { headers: { 'if-none-match': '"other", ' + etag } })).status, 304);
    assert.is((await api.req('GET', APP, { headers: { 'if-none-match': '"other"' } })).status, 200);
    assert.is((await api.req('GET', APP, { headers: { 'if-match': etag } })).status, 200);
    const failed = await api.json('GET', APP, { headers: { 'if-match': '"other"' } });
    assert.is(failed.status, 412);
    assert.is(infoOf(failed.body).code, 'etag-mismatch');
  });

  t('PUT, PATCH, DELETE with a stale If-Match → 412 and nothing changes; the current ETag works', async () => {
    const etag = (await etagOf(APP)) ?? '';
    const stale = '"stale-etag"';
    for (const [method, body] of [
      ['PUT', { name: 'w1', version: '9' }],
      ['PATCH', { version: '9' }],
      ['DELETE', undefined],
    ] as const) {
      const res = await api.json(method, APP, { ...(body ? { body } : {}), headers: { 'if-match': stale } });
      assert.is(res.status, 412, method);
      assert.is(infoOf(res.body).code, 'etag-mismatch', method);
      assert.is(await etagOf(APP), etag, method);
    }
    const ok = await api.json('PATCH', APP, { body: { version: '2' }, headers: { 'if-match': etag } });
    assert.is(ok.status, 204);
    assert.not.equal(ok.headers.get('etag'), etag);
    assert.is(ok.headers.get('etag'), await etagOf(APP));
  });

  t(
    'If-None-Match: * on PUT creates only when missing (412 when it exists); If-Match on a missing object → 412',
    async () => {
      const etag = await etagOf(APP);
      const exists = await api.json('PUT', APP, {
        body: { name: 'w1', version: 'x' },
        headers: { 'if-none-match': '*' },
      });
      assert.is(exists.status, 412);
      assert.is(infoOf(exists.body).code, 'etag-match');
      assert.is(await etagOf(APP), etag);
      const fresh = await api.json('PUT', '/v1/config/applications/w4', {
        body: { name: 'w4' },
        headers: { 'if-none-match': '*' },
      });
      assert.is(fresh.status, 201);
      const missing = await api.json('PUT', '/v1/config/applications/w5', {
        body: { name: 'w5' },
        headers: { 'if-match': '*' },
      });
      assert.is(missing.status, 412);
      assert.is((await api.json('GET', '/v1/config/applications/w5')).status, 404);
    },
  );

  t('multi-object change with a stale x-etag → 412, none of its changes applied', async () => {
    const etag = await etagOf(APP);
    const res = await api.json('PATCH', '/v1/config', {
      body: [
        { 'x-path': '/v1/config/applications/w6', name: 'w6' },
        { 'x-path': APP, 'x-operation': 'update', 'x-etag': '"stale"', version: '7' },
      ],
    });
    assert.is(res.status, 412);
    assert.is((await api.json('GET', '/v1/config/applications/w6')).status, 404);
    assert.is(await etagOf(APP), etag);
  });

  t('x-etag without its quotes (the bare value, as a user copies it) is taken as the ETag', async () => {
    const etag = await etagOf(APP);
    const bare = etag!.replace(/^"|"$/g, '');
    const res = await api.json('PATCH', '/v1/config', {
      body: [{ 'x-path': APP, 'x-operation': 'update', 'x-etag': bare, version: '8' }],
    });
    assert.is(res.status, 204, JSON.stringify(res.body));
    const stale = await api.json('PATCH', '/v1/config', {
      body: [{ 'x-path': APP, 'x-operation': 'update', 'x-etag': bare, version: '9' }],
    });
    assert.is(stale.status, 412, 'the old value no longer matches');
  });

  t('strict JSON: duplicate keys → 400 duplicate-key at the second key (also nested, also YAML)', async () => {
    const cases: Array<[string, string, number]> = [
      ['{"name":"w1","name":"w1"}', 'application/json', 13],
      ['{"name":"w1","version":"1","services":[{"name":"a","image":"x","image":"y"}]}', 'application/json', 63],
      ['name: w1\nversion: "1"\nname: w1\n', 'application/yaml', 22],
    ];
    const etag = await etagOf(APP);
    for (const [raw, type, position] of cases) {
      const res = await api.json('PUT', APP, { raw, type });
      assert.is(res.status, 400, raw);
      const info = infoOf(res.body);
      assert.is(info.code, 'duplicate-key', raw);
      assert.is(info.position, position, raw);
      assert.is(await etagOf(APP), etag);
    }
  });

  t.run();
}

forEachBackend(wireSuite);
