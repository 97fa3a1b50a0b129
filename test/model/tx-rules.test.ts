/**
 * PATCH/POST /v1/config rules (issue 3, items 1, 2, 6), on the embedded store and on Redis
 * (DB 12): every x-operation's error rule with its status, code and the failing x-path in
 * error-info; the sequence rules inside one body; bad input; all or nothing (every failing
 * case leaves GET /v1/config?send-etag=true exactly as it was).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startApi, type TestApi } from '../helpers/api.js';
import { forEachBackend } from '../helpers/backends.js';
import { firstProblem } from '../helpers/assert.js';

type Item = Record<string, unknown>;
type Case = {
  name: string;
  body: Item[] | string;
  type?: string;
  query?: string;
  status: number;
  code?: string;
  xPath?: string;
};

const app = (name: string, extra: Item = {}): Item => ({ 'x-path': `/v1/config/applications/${name}`, ...extra });
const A1 = '/v1/config/applications/a1';
const NEW = '/v1/config/applications/new';

/** Status, error-info code and x-path of the first error, for each failing body. */
const failing: Case[] = [
  {
    name: 'create on an existing object',
    body: [app('a1', { 'x-operation': 'create', version: '9' })],
    status: 409,
    code: 'exists',
    xPath: A1,
  },
  {
    name: 'update on a missing object',
    body: [app('zz', { 'x-operation': 'update', version: '9' })],
    status: 404,
    code: 'missing',
    xPath: '/v1/config/applications/zz',
  },
  {
    name: 'delete on a missing object',
    body: [app('zz', { 'x-operation': 'delete' })],
    status: 404,
    code: 'missing',
    xPath: '/v1/config/applications/zz',
  },
  {
    name: 'x-etag that does not match',
    body: [app('a1', { 'x-etag': '"stale"', version: '9' })],
    status: 412,
    code: 'etag-mismatch',
    xPath: A1,
  },
  {
    name: 'x-etag on a missing object',
    body: [app('zz', { 'x-etag': '"any"', version: '9' })],
    status: 412,
    code: 'etag-mismatch',
    xPath: '/v1/config/applications/zz',
  },
  {
    name: 'x-etag on remove of a missing object',
    body: [app('zz', { 'x-operation': 'remove', 'x-etag': '"any"' })],
    status: 412,
    code: 'etag-mismatch',
    xPath: '/v1/config/applications/zz',
  },
  {
    name: 'unknown x-operation',
    body: [app('a1', { 'x-operation': 'upsert', version: '9' })],
    status: 400,
    code: 'bad-x-operation',
    xPath: A1,
  },
  {
    name: 'x-operation not a string',
    body: [app('a1', { 'x-operation': 3, version: '9' })],
    status: 400,
    code: 'bad-x-operation',
    xPath: A1,
  },
  {
    name: 'x-path outside /v1/config',
    body: [{ 'x-path': '/v1/state/applications/a1', version: '9' }],
    status: 400,
    code: 'x-path-outside',
    xPath: '/v1/state/applications/a1',
  },
  {
    name: 'x-path is /v1/config itself',
    body: [{ 'x-path': '/v1/config', version: '9' }],
    status: 400,
    code: 'x-path-outside',
    xPath: '/v1/config',
  },
  { name: 'x-path missing', body: [{ version: '9' }], status: 400, code: 'missing-x-path' },
  {
    name: 'x-path not a resource',
    body: [{ 'x-path': '/v1/config/nothing/here' }],
    status: 404,
    code: 'unknown-path',
    xPath: '/v1/config/nothing/here',
  },
  {
    name: 'x-path names a list',
    body: [{ 'x-path': '/v1/config/applications', version: '9' }],
    status: 400,
    code: 'not-an-object',
    xPath: '/v1/config/applications',
  },
  {
    name: 'x-etag not a string',
    body: [app('a1', { 'x-etag': 5, version: '9' })],
    status: 400,
    code: 'bad-x-etag',
    xPath: A1,
  },
  {
    name: 'unknown x- field',
    body: [app('a1', { 'x-color': 'red', version: '9' })],
    status: 400,
    code: 'x-field',
    xPath: A1,
  },
  {
    name: 'x-json-patch with replace',
    body: [app('a1', { 'x-operation': 'replace', 'x-json-patch': [] })],
    status: 400,
    code: 'x-json-patch-op',
    xPath: A1,
  },
  {
    name: 'x-json-patch with fields',
    body: [app('a1', { 'x-operation': 'update', version: '9', 'x-json-patch': [] })],
    status: 400,
    code: 'x-json-patch-fields',
    xPath: A1,
  },
  {
    name: 'x-json-patch copy',
    body: [
      app('a1', { 'x-operation': 'update', 'x-json-patch': [{ op: 'copy', from: '/version', path: '/description' }] }),
    ],
    status: 400,
    code: 'unsupported-op',
    xPath: A1,
  },
  {
    name: 'x-json-patch test fails',
    body: [app('a1', { 'x-operation': 'update', 'x-json-patch': [{ op: 'test', path: '/version', value: '2' }] })],
    status: 400,
    code: 'test-failed',
    xPath: A1,
  },
  { name: 'schema: wrong type', body: [app('a1', { version: 9 })], status: 400, code: 'schema-type', xPath: A1 },
  {
    name: 'name differs from x-path',
    body: [app('a1', { name: 'other', version: '9' })],
    status: 400,
    code: 'name-mismatch',
    xPath: A1,
  },
  {
    name: 'create then replace of one path',
    body: [app('new', { 'x-operation': 'create', version: '1' }), app('new', { version: '2' })],
    status: 400,
    code: 'conflicting-operations',
    xPath: NEW,
  },
  {
    name: 'replace twice',
    body: [app('new', { version: '1' }), app('new', { version: '2' })],
    status: 400,
    code: 'conflicting-operations',
    xPath: NEW,
  },
  {
    name: 'update then delete',
    body: [app('a1', { 'x-operation': 'update', version: '2' }), app('a1', { 'x-operation': 'delete' })],
    status: 400,
    code: 'conflicting-operations',
    xPath: A1,
  },
  {
    name: 'delete then update',
    body: [app('a1', { 'x-operation': 'delete' }), app('a1', { 'x-operation': 'update', version: '2' })],
    status: 400,
    code: 'conflicting-operations',
    xPath: A1,
  },
  {
    name: 'create twice',
    body: [app('new', { 'x-operation': 'create' }), app('new', { 'x-operation': 'create' })],
    status: 400,
    code: 'conflicting-operations',
    xPath: NEW,
  },
  {
    name: 'valid change then a failing one',
    body: [app('new', { version: '1' }), app('a1', { version: '2' }), app('zz', { 'x-operation': 'delete' })],
    status: 404,
    code: 'missing',
    xPath: '/v1/config/applications/zz',
  },
  {
    name: 'failing change first, valid after',
    body: [app('zz', { 'x-operation': 'update', version: '1' }), app('new', { version: '1' })],
    status: 404,
    code: 'missing',
    xPath: '/v1/config/applications/zz',
  },
  {
    name: 'default-operation=create on an existing object',
    query: '?default-operation=create',
    body: [app('a1', { version: '2' })],
    status: 409,
    code: 'exists',
    xPath: A1,
  },
  {
    name: 'default-operation=update on a missing object',
    query: '?default-operation=update',
    body: [app('zz', { version: '2' })],
    status: 404,
    code: 'missing',
    xPath: '/v1/config/applications/zz',
  },
  {
    name: 'default-operation unknown',
    query: '?default-operation=merge',
    body: [app('new', { version: '2' })],
    status: 400,
  },
  { name: 'empty list', body: [], status: 400, code: 'empty' },
  {
    name: 'item not an object',
    body: [app('new', { version: '1' }), 'text' as unknown as Item],
    status: 400,
    code: 'not-an-object',
  },
  { name: 'malformed JSON', body: '[{"x-path": "/v1/config/applications/new"', status: 400, code: 'syntax' },
  {
    name: 'duplicate key in JSON',
    body: '[{"x-path": "/v1/config/applications/new", "x-path": "/v1/config/applications/a1"}]',
    status: 400,
    code: 'duplicate-key',
  },
  {
    name: 'malformed YAML',
    type: 'application/yaml',
    body: 'x-path: /v1/config/applications/new\n  version: [1\n',
    status: 400,
    code: 'syntax',
  },
  {
    name: 'YAML document not an object',
    type: 'application/yaml',
    body: '---\nx-path: /v1/config/applications/new\n---\n- a\n- b\n',
    status: 400,
    code: 'not-an-object',
  },
];

const firstInfo = (body: unknown) => firstProblem(body);

async function snapshot(api: TestApi): Promise<unknown> {
  const r = await api.json('GET', '/v1/config?send-etag=true');
  assert.is(r.status, 200);
  return r.body;
}

async function seed(api: TestApi): Promise<void> {
  const r = await api.json('PATCH', '/v1/config', { body: [app('a1', { version: '1' }), app('a2', { version: '1' })] });
  assert.is(r.status, 204, JSON.stringify(r.body));
}

forEachBackend((backend) => {
  const t = (name: string, fn: (api: TestApi) => Promise<void>) =>
    test(`${backend}: ${name}`, async () => {
      const api = await startApi(backend, { db: 12 });
      try {
        await seed(api);
        await fn(api);
      } finally {
        await api.close();
      }
    });

  t('every failing body: its status, code and x-path; nothing changed (PATCH and POST)', async (api) => {
    const before = await snapshot(api);
    for (const c of failing) {
      for (const method of ['PATCH', 'POST']) {
        const raw = typeof c.body === 'string' ? c.body : JSON.stringify(c.body);
        const r = await api.json(method, `/v1/config${c.query ?? ''}`, { raw, type: c.type ?? 'application/json' });
        const label = `${method} ${c.name}: ${JSON.stringify(r.body)}`;
        assert.is(r.status, c.status, label);
        const info = firstInfo(r.body);
        if (c.code) assert.is(info?.code, c.code, label);
        if (c.xPath) assert.is(info?.['x-path'], c.xPath, label);
      }
    }
    assert.equal(await snapshot(api), before, 'no failing body changed anything');
  });

  t(
    'rules that succeed: remove of a missing object, create after delete, create then update, update then update',
    async (api) => {
      const r = await api.json('PATCH', '/v1/config', {
        body: [
          app('zz', { 'x-operation': 'remove' }),
          app('a1', { 'x-operation': 'delete' }),
          app('a1', { 'x-operation': 'create', version: '7' }),
          app('new', { 'x-operation': 'create', version: '1' }),
          app('new', { 'x-operation': 'update', description: 'built on the create' }),
          app('a2', { 'x-operation': 'update', version: '2' }),
          app('a2', {
            'x-operation': 'update',
            'x-json-patch': [
              { op: 'test', path: '/version', value: '2' },
              { op: 'add', path: '/description', value: 'sees the earlier update' },
            ],
          }),
        ],
      });
      assert.is(r.status, 204, JSON.stringify(r.body));
      const read = async (n: string) => (await api.json('GET', `/v1/config/applications/${n}`)).body;
      assert.equal(await read('a1'), { name: 'a1', version: '7' });
      assert.equal(await read('new'), { name: 'new', version: '1', description: 'built on the create' });
      assert.equal(await read('a2'), { name: 'a2', version: '2', description: 'sees the earlier update' });
      assert.is((await api.json('GET', '/v1/config/applications/zz')).status, 404);
    },
  );

  t("x-etag: send-etag values are the objects' ETags; compared with the ETag before the transaction", async (api) => {
    const etag = (await api.req('GET', '/v1/config/applications/a1')).headers.get('etag');
    const listed = (await snapshot(api)) as Array<{ 'x-path': string; 'x-etag': string }>;
    assert.is(listed.find((d) => d['x-path'] === A1)?.['x-etag'], etag);
    // The second change's x-etag is the one a1 had before the body, not after change 1.
    const ok = await api.json('PATCH', '/v1/config', {
      body: [
        app('a1', { 'x-operation': 'update', 'x-etag': etag, version: '2' }),
        app('a1', { 'x-operation': 'update', 'x-etag': etag, description: 'd' }),
      ],
    });
    assert.is(ok.status, 204, JSON.stringify(ok.body));
    const stale = await api.json('PATCH', '/v1/config', {
      body: [app('a2', { version: '5' }), app('a1', { 'x-etag': etag, version: '3' })],
    });
    assert.is(stale.status, 412);
    assert.is(firstInfo(stale.body)?.['x-path'], A1);
    assert.equal(
      (await api.json('GET', '/v1/config/applications/a2')).body,
      { name: 'a2', version: '1' },
      'a2 untouched by the refused body',
    );
    const star = await api.json('PATCH', '/v1/config', {
      body: [app('a1', { 'x-operation': 'update', 'x-etag': '*', version: '4' })],
    });
    assert.is(star.status, 204);
  });

  t('single-resource writes: If-Match / If-None-Match, also as lists of ETags (RFC 9110)', async (api) => {
    const etag = (await api.req('GET', '/v1/config/applications/a1')).headers.get('etag') as string;
    const put = (headers: Record<string, string>, version: string) =>
      api.json('PUT', '/v1/config/applications/a1', { body: { version }, headers });
    assert.is((await put({ 'if-match': '"other"' }, '2')).status, 412);
    assert.is((await put({ 'if-match': `"other", ${etag}` }, '2')).status, 204, 'one of the listed ETags matches');
    const now = (await api.req('GET', '/v1/config/applications/a1')).headers.get('etag') as string;
    assert.is((await put({ 'if-none-match': `"other", ${now}` }, '3')).status, 412, 'the current ETag is listed');
    assert.is((await put({ 'if-none-match': `"other", ${etag}` }, '3')).status, 204);
    assert.is(
      (await api.json('DELETE', '/v1/config/applications/a2', { headers: { 'if-match': '"x","y"' } })).status,
      412,
    );
    assert.is(
      (
        await api.json('PUT', '/v1/config/applications/a2', {
          body: { version: '2' },
          headers: { 'if-none-match': '*' },
        })
      ).status,
      412,
    );
    assert.equal((await api.json('GET', '/v1/config/applications/a1')).body, { name: 'a1', version: '3' });
  });

  t('POST and PATCH /v1/config are the same operation', async (api) => {
    const body = [
      app('p1', { version: '1' }),
      app('a1', { 'x-operation': 'update', description: 'x' }),
      app('a2', { 'x-operation': 'remove' }),
    ];
    const start = await snapshot(api);
    assert.is((await api.json('POST', '/v1/config', { body })).status, 204);
    const afterPost = await snapshot(api);
    // Back to the start, then the same body with PATCH: the same result, to the ETag.
    const undo = await api.json('PATCH', '/v1/config', {
      body: [app('p1', { 'x-operation': 'delete' }), app('a1', { version: '1' }), app('a2', { version: '1' })],
    });
    assert.is(undo.status, 204);
    assert.equal(await snapshot(api), start);
    assert.is((await api.json('PATCH', '/v1/config', { body })).status, 204);
    assert.equal(await snapshot(api), afterPost);
  });

  t('YAML: multi-document bodies, x-json-patch in YAML, GET as YAML round-trips', async (api) => {
    const yaml = [
      '---',
      'x-path: /v1/config/applications/y1',
      'version: "1"',
      '---',
      'x-path: /v1/config/applications/a1',
      'x-operation: update',
      'x-json-patch:',
      '  - {op: test, path: /version, value: "1"}',
      '  - {op: replace, path: /version, value: "2"}',
      '---',
      'x-path: /v1/config/applications/a2',
      'x-operation: delete',
      '',
    ].join('\n');
    const r = await api.json('PATCH', '/v1/config', { raw: yaml, type: 'application/yaml' });
    assert.is(r.status, 204, JSON.stringify(r.body));
    assert.equal((await api.json('GET', '/v1/config/applications/a1')).body, { name: 'a1', version: '2' });
    assert.equal((await api.json('GET', '/v1/config/applications/y1')).body, { name: 'y1', version: '1' });
    assert.is((await api.json('GET', '/v1/config/applications/a2')).status, 404);

    const before = await snapshot(api);
    const res = await api.req('GET', '/v1/config?match-path=/v1/config/applications/*', {
      headers: { accept: 'application/yaml' },
    });
    const text = await res.text();
    assert.ok(text.startsWith('---\n'), text);
    assert.is(text.split(/^---$/m).length - 1, 2, 'one document per object');
    const back = await api.json('PATCH', '/v1/config', { raw: text, type: 'application/yaml' });
    assert.is(back.status, 204, JSON.stringify(back.body));
    assert.equal(await snapshot(api), before, 'writing the GET result back changes nothing');
  });

  t('GET /v1/state: the same representation, x-path under /v1/state', async (api) => {
    const r = await api.json('GET', '/v1/state?match-path=/v1/state/applications/*');
    assert.is(r.status, 200);
    assert.equal(r.body, [
      { 'x-path': '/v1/state/applications/a1', name: 'a1', version: '1' },
      { 'x-path': '/v1/state/applications/a2', name: 'a2', version: '1' },
    ]);
  });
});

test.run();
