/**
 * Single-resource PATCH: plain patch in JSON and YAML (ordered arrays
 * replaced, unordered merged), JSON Patch in +json and +yaml with every supported op, copy
 * and move refused, the result validated, and any failure leaving the object as it was.
 * Both stores (Redis DB 11).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { useApi } from '../helpers/api.js';
import { forEachBackend, type Backend } from '../helpers/backends.js';
import { problemOf, wireErrors } from '../helpers/assert.js';

type ErrorInfo = { code?: string; path?: string; 'op-index'?: number; [k: string]: unknown };

function infosOf(body: unknown): ErrorInfo[] {
  return wireErrors(body).map((e) => problemOf(e) as ErrorInfo);
}

const PATH = '/v1/config/volga/webhooks/p1';
const base = {
  name: 'p1',
  topics: ['a', 'b'],
  'site-placement': { 'all-sites': true },
  url: 'http://example.test/hook',
  data: '${MSG}',
  headers: [
    { name: 'x-one', value: '1' },
    { name: 'x-two', value: '2' },
  ],
  variables: [{ name: 'V1', 'value-from-message': { 'json-pointer': '/payload/a' } }],
  tries: 5,
};

function patchSuite(backend: Backend): void {
  const t = suite(`api-patch (${backend})`);
  const api = useApi(t, backend, { db: 11 });
  t.before.each(async () => {
    const res = await api.json('PUT', PATH, { body: base });
    assert.ok(res.status === 201 || res.status === 204, JSON.stringify(res.body));
  });

  const read = async () => {
    const res = await api.json('GET', PATH);
    assert.is(res.status, 200);
    return { value: res.body as Record<string, unknown>, etag: res.headers.get('etag') };
  };

  /** A rejected PATCH: status, the codes (and paths) reported, and the object unchanged. */
  const refused = async (
    opts: { body?: unknown; raw?: string; type?: string },
    status: number,
    code: string,
    path?: string,
  ) => {
    const before = await read();
    const res = await api.json('PATCH', PATH, opts);
    assert.is(res.status, status, JSON.stringify(res.body));
    const infos = infosOf(res.body);
    assert.ok(
      infos.some((i) => i.code === code && (path === undefined || i.path === path)),
      `expected ${code} at ${path}: ${JSON.stringify(infos)}`,
    );
    const after = await read();
    assert.is(after.etag, before.etag);
    assert.equal(after.value, before.value);
    return infos;
  };

  t(
    'plain patch (JSON): scalars replaced, ordered headers replaced, topics merged as a set, variables merged by name',
    async () => {
      const res = await api.json('PATCH', PATH, {
        body: {
          tries: 7,
          headers: [{ name: 'x-three', value: '3' }],
          topics: ['b', 'c'],
          variables: [
            { name: 'V1', 'value-from-message': { 'json-pointer': '/payload/a', default: 'none' } },
            { name: 'V2', 'value-from-message': { 'json-pointer': '/payload/b' } },
          ],
        },
      });
      assert.is(res.status, 204, JSON.stringify(res.body));
      const { value } = await read();
      assert.is(value.tries, 7);
      assert.equal(value.headers, [{ name: 'x-three', value: '3' }]);
      assert.equal(value.topics, ['a', 'b', 'c']);
      assert.equal(value.variables, [
        { name: 'V1', 'value-from-message': { 'json-pointer': '/payload/a', default: 'none' } },
        { name: 'V2', 'value-from-message': { 'json-pointer': '/payload/b' } },
      ]);
      assert.is(value.url, base.url);
    },
  );

  t('plain patch (YAML): same merge rules; null removes a member', async () => {
    const yaml = 'tries: null\ntopics: [d]\nmatch-string:\n  - error\n';
    const res = await api.json('PATCH', PATH, { raw: yaml, type: 'application/yaml' });
    assert.is(res.status, 204, JSON.stringify(res.body));
    const { value } = await read();
    assert.not.ok('tries' in value);
    assert.equal(value.topics, ['a', 'b', 'd']);
    assert.equal(value['match-string'], ['error']);
  });

  t('plain patch on the site: management-ipv4-access-list (ordered) replaced, labels merged', async () => {
    const site = '/v1/config/sites/ps';
    await api.json('PUT', site, {
      body: { name: 'ps', labels: { a: '1' }, 'management-ipv4-access-list': ['10.0.0.0/8', '172.16.0.0/12'] },
    });
    assert.is(
      (
        await api.json('PATCH', site, {
          body: { labels: { b: '2' }, 'management-ipv4-access-list': ['192.168.1.0/24'] },
        })
      ).status,
      204,
    );
    const got = await api.json('GET', site);
    assert.equal(got.body, {
      name: 'ps',
      labels: { a: '1', b: '2' },
      'management-ipv4-access-list': ['192.168.1.0/24'],
    });
  });

  t('JSON Patch (+json): add, remove, replace, test, safe-remove, safe-replace in one request', async () => {
    const ops = [
      { op: 'test', path: '/tries', value: 5 },
      { op: 'replace', path: '/tries', value: 9 },
      { op: 'add', path: '/topics/-', value: 'c' },
      { op: 'remove', path: '/headers/0' },
      { op: 'safe-remove', path: '/no-match-string' },
      { op: 'safe-replace', path: '/start-position', value: 'beginning' },
      { op: 'safe-replace', path: '/url', value: 'http://example.test/other' },
    ];
    const res = await api.json('PATCH', PATH, { body: ops, type: 'application/json-patch+json' });
    assert.is(res.status, 204, JSON.stringify(res.body));
    const { value } = await read();
    assert.is(value.tries, 9);
    assert.equal(value.topics, ['a', 'b', 'c']);
    assert.equal(value.headers, [{ name: 'x-two', value: '2' }]);
    assert.is(value['start-position'], 'beginning');
    assert.is(value.url, 'http://example.test/other');
  });

  t('JSON Patch (+yaml): the same operations written in YAML', async () => {
    const yaml = [
      '- op: test',
      '  path: /topics/0',
      '  value: a',
      '- op: add',
      '  path: /match-string',
      '  value: [warn]',
      '- op: safe-remove',
      '  path: /variables/5',
      '- op: remove',
      '  path: /tries',
    ].join('\n');
    const res = await api.json('PATCH', PATH, { raw: yaml, type: 'application/json-patch+yaml' });
    assert.is(res.status, 204, JSON.stringify(res.body));
    const { value } = await read();
    assert.equal(value['match-string'], ['warn']);
    assert.not.ok('tries' in value);
  });

  t('JSON Patch copy and move → 400 unsupported-op (at its index), nothing changed', async () => {
    const infos = await refused(
      {
        body: [
          { op: 'replace', path: '/tries', value: 1 },
          { op: 'copy', from: '/url', path: '/data' },
        ],
        type: 'application/json-patch+json',
      },
      400,
      'unsupported-op',
    );
    assert.is(infos[0]?.['op-index'], 1);
    await refused(
      { body: [{ op: 'move', from: '/url', path: '/data' }], type: 'application/json-patch+json' },
      400,
      'unsupported-op',
    );
    await refused(
      { raw: '- op: move\n  from: /url\n  path: /data\n', type: 'application/json-patch+yaml' },
      400,
      'unsupported-op',
    );
  });

  t(
    'JSON Patch failures: test-failed, missing target, bad pointer, bad op — at their index, nothing changed',
    async () => {
      const cases: Array<[unknown[], string, number]> = [
        [
          [
            { op: 'replace', path: '/tries', value: 1 },
            { op: 'test', path: '/tries', value: 5 },
          ],
          'test-failed',
          1,
        ],
        [[{ op: 'remove', path: '/nothing' }], 'missing-target', 0],
        [[{ op: 'replace', path: '/nothing', value: 1 }], 'missing-target', 0],
        [[{ op: 'add', path: 'tries', value: 1 }], 'bad-pointer', 0],
        [
          [
            { op: 'add', path: '/tries', value: 1 },
            { op: 'frobnicate', path: '/tries' },
          ],
          'bad-op',
          1,
        ],
        [[{ op: 'add', path: '/topics/9', value: 'z' }], 'bad-index', 0],
      ];
      for (const [ops, code, index] of cases) {
        const infos = await refused({ body: ops, type: 'application/json-patch+json' }, 400, code);
        assert.is(infos[0]?.['op-index'], index, code);
      }
      await refused({ body: { op: 'add' }, type: 'application/json-patch+json' }, 400, 'bad-patch');
    },
  );

  t('the patched result is validated against the schema: any failure changes nothing', async () => {
    await refused({ body: { tries: -1 } }, 400, 'schema-minimum', 'tries');
    await refused({ body: { 'start-position': 'middle' } }, 400, 'schema-enum', 'start-position');
    await refused({ body: { unknown: 1 } }, 400, 'unknown-field', 'unknown');
    await refused(
      { body: { headers: [{ name: 'bad header', value: 'x' }] } },
      400,
      'schema-pattern',
      'headers[0]/name',
    );
    await refused(
      { body: [{ op: 'remove', path: '/url' }], type: 'application/json-patch+json' },
      400,
      'schema-required',
      'url',
    );
    await refused(
      {
        body: [{ op: 'replace', path: '/site-placement', value: { 'all-sites': true, sites: ['s1'] } }],
        type: 'application/json-patch+json',
      },
      400,
      'schema-maxProperties',
      'site-placement',
    );
    const re = await refused({ body: { 'match-re': ['(a)\\1'] } }, 400, 'regex-unsupported', 'match-re[0]');
    assert.equal(re[0], { ...re[0], construct: 'backreference', position: 3 });
    await refused(
      { body: [{ op: 'replace', path: '/name', value: 'p2' }], type: 'application/json-patch+json' },
      400,
      'name-mismatch',
      'name',
    );
  });

  t('a plain patch body must be one object; a JSON Patch body must be a list', async () => {
    await refused({ body: [{ tries: 1 }] }, 400, 'not-an-object');
    await refused({ raw: 'a: 1\n---\nb: 2\n', type: 'application/yaml' }, 400, 'document-count');
    await refused({ body: { 'x-path': '/v1/config/volga/webhooks/p1' } }, 400, 'x-field', 'x-path');
  });

  t('PATCH on a missing object → 404, for both patch formats', async () => {
    const a = await api.json('PATCH', '/v1/config/volga/webhooks/none', { body: { tries: 1 } });
    assert.is(a.status, 404);
    const b = await api.json('PATCH', '/v1/config/volga/webhooks/none', {
      body: [{ op: 'safe-replace', path: '/tries', value: 1 }],
      type: 'application/json-patch+json',
    });
    assert.is(b.status, 404);
    assert.is((await api.json('GET', '/v1/config/volga/webhooks/none')).status, 404);
  });

  t.run();
}

forEachBackend(patchSuite);
