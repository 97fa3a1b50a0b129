/**
 * Keyed lists: a plain patch merges lists of objects by their key (`name`, or `host-id` for a
 * site's `hosts`) and lists of strings as sets; `management-ipv4-access-list` and `headers`
 * are ordered and replaced. Two entries with the same key in one list are a 400 naming both
 * positions, whatever brings them (PUT, POST, PATCH, a multi-object body). Both stores.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { useApi } from '../helpers/api.js';
import { forEachBackend, type Backend } from '../helpers/backends.js';
import { wireErrors } from '../helpers/assert.js';

const SITE = '/v1/config/sites/s1';
const site = {
  name: 's1',
  type: 'edge',
  labels: { zone: 'a' },
  hosts: [
    { 'host-id': 'h1', labels: { cpu: 'arm' } },
    { 'host-id': 'h2', labels: {} },
  ],
  'management-ipv4-access-list': ['10.0.0.0/8', '192.168.0.0/16'],
};
const HOOK = '/v1/config/volga/webhooks/k1';
const hook = {
  name: 'k1',
  topics: ['a'],
  'site-placement': { 'all-sites': true },
  url: 'http://example.test/hook',
  data: '${MSG}',
  headers: [
    { name: 'x-one', value: '1' },
    { name: 'x-two', value: '2' },
  ],
  variables: [{ name: 'V1', 'value-from-message': { 'json-pointer': '/payload/a' } }],
};

/** A 400 whose message names both positions, with the object left as it was. */
function duplicateRefused(res: { status: number; body: unknown }, first: string, second: string): void {
  assert.is(res.status, 400, JSON.stringify(res.body));
  const errors = wireErrors(res.body);
  const e = errors.find((x) => x['error-info'] === 'duplicate-key');
  assert.ok(e, `no duplicate-key error in ${JSON.stringify(res.body)}`);
  assert.ok(e['error-message'].includes(first), e['error-message']);
  assert.ok(e['error-message'].includes(second), e['error-message']);
  assert.equal(e['error-details']?.positions, [first, second]);
}

function keyedSuite(backend: Backend): void {
  const t = suite(`api-keyed-lists (${backend})`);
  const api = useApi(t, backend, { db: 5 });
  t.before.each(async () => {
    for (const [path, body] of [
      [SITE, site],
      [HOOK, hook],
    ] as const) {
      const res = await api.json('PUT', path, { body });
      assert.ok(res.status === 201 || res.status === 204, JSON.stringify(res.body));
    }
  });
  const get = async (path: string) => (await api.json('GET', path)).body as Record<string, unknown>;

  t('a plain patch merges hosts by host-id', async () => {
    const res = await api.json('PATCH', SITE, {
      body: { hosts: [{ 'host-id': 'h1', labels: { gpu: 'yes' } }, { 'host-id': 'h3' }] },
    });
    assert.is(res.status, 204, JSON.stringify(res.body));
    assert.equal((await get(SITE)).hosts, [
      { 'host-id': 'h1', labels: { cpu: 'arm', gpu: 'yes' } },
      { 'host-id': 'h2', labels: {} },
      { 'host-id': 'h3' },
    ]);
  });

  t('YAML plain patch merges hosts by host-id too', async () => {
    const res = await api.json('PATCH', SITE, {
      raw: 'hosts:\n  - host-id: h2\n    labels: {disk: ssd}\n',
      type: 'application/yaml',
    });
    assert.is(res.status, 204, JSON.stringify(res.body));
    const hosts = (await get(SITE)).hosts as Array<Record<string, unknown>>;
    assert.is(hosts.length, 2);
    assert.equal(hosts[1], { 'host-id': 'h2', labels: { disk: 'ssd' } });
  });

  t('ordered lists are replaced, string lists merge as sets, variables by name', async () => {
    assert.is(
      (await api.json('PATCH', SITE, { body: { 'management-ipv4-access-list': ['172.16.0.0/12'] } })).status,
      204,
    );
    assert.equal((await get(SITE))['management-ipv4-access-list'], ['172.16.0.0/12']);
    const res = await api.json('PATCH', HOOK, {
      body: {
        topics: ['b', 'a'],
        headers: [{ name: 'x-three', value: '3' }],
        variables: [{ name: 'V1', 'value-from-message': { 'json-pointer': '/payload/b' } }],
      },
    });
    assert.is(res.status, 204, JSON.stringify(res.body));
    const after = await get(HOOK);
    assert.equal(after.topics, ['a', 'b']);
    assert.equal(after.headers, [{ name: 'x-three', value: '3' }]);
    assert.equal(after.variables, [{ name: 'V1', 'value-from-message': { 'json-pointer': '/payload/b' } }]);
  });

  t('PUT and POST with a repeated host-id → 400 naming both positions', async () => {
    const before = await get(SITE);
    const dup = { ...site, hosts: [{ 'host-id': 'h1' }, { 'host-id': 'h1', labels: { a: 'b' } }] };
    duplicateRefused(await api.json('PUT', SITE, { body: dup }), '/hosts/0', '/hosts/1');
    assert.equal(await get(SITE), before);
    const created = await api.json('POST', '/v1/config/sites', { body: { ...dup, name: 's2' } });
    duplicateRefused(created, '/hosts/0', '/hosts/1');
    assert.is((await api.json('GET', '/v1/config/sites/s2')).status, 404);
  });

  t('a repeated name in any keyed list, also nested → 400', async () => {
    const app = {
      name: 'a1',
      services: [
        { name: 'web', image: 'nginx', env: [{ name: 'A' }, { name: 'B' }, { name: 'A', value: 'x' }] },
        { name: 'db', image: 'pg' },
      ],
    };
    duplicateRefused(
      await api.json('PUT', '/v1/config/applications/a1', { body: app }),
      '/services/0/env/0',
      '/services/0/env/2',
    );
    const vars = [
      { name: 'V1', 'value-from-message': { 'json-pointer': '/a' } },
      { name: 'V2', 'value-from-message': { 'json-pointer': '/b' } },
      { name: 'V1', 'value-from-message': { 'json-pointer': '/c' } },
    ];
    duplicateRefused(
      await api.json('PUT', HOOK, { body: { ...hook, variables: vars } }),
      '/variables/0',
      '/variables/2',
    );
  });

  t('a PATCH whose body repeats a key → 400 naming the positions in the body', async () => {
    const before = await get(SITE);
    const res = await api.json('PATCH', SITE, {
      body: { hosts: [{ 'host-id': 'h9' }, { 'host-id': 'h8' }, { 'host-id': 'h9', labels: { a: 'b' } }] },
    });
    duplicateRefused(res, '/hosts/0', '/hosts/2');
    assert.equal(await get(SITE), before);
  });

  t('a JSON Patch that adds a second h1 → 400', async () => {
    const res = await api.json('PATCH', SITE, {
      body: [{ op: 'add', path: '/hosts/-', value: { 'host-id': 'h1' } }],
      type: 'application/json-patch+json',
    });
    duplicateRefused(res, '/hosts/0', '/hosts/2');
  });

  t('multi-object bodies: a repeated key in an object → 400, nothing changes', async () => {
    const before = await get(SITE);
    const res = await api.json('PATCH', '/v1/config', {
      body: [
        { 'x-path': '/v1/config/sites/s3', name: 's3' },
        {
          'x-path': SITE,
          'x-operation': 'update',
          hosts: [{ 'host-id': 'h4' }, { 'host-id': 'h4' }],
        },
      ],
    });
    duplicateRefused(res, '/hosts/0', '/hosts/1');
    assert.equal(await get(SITE), before);
    assert.is((await api.json('GET', '/v1/config/sites/s3')).status, 404);
    const replace = await api.json('POST', '/v1/config', {
      body: [{ 'x-path': '/v1/config/sites/s4', name: 's4', hosts: [{ 'host-id': 'x' }, { 'host-id': 'x' }] }],
    });
    duplicateRefused(replace, '/hosts/0', '/hosts/1');
  });

  t('headers are ordered: the same header name twice stays allowed', async () => {
    const headers = [
      { name: 'x-a', value: '1' },
      { name: 'x-a', value: '2' },
    ];
    const res = await api.json('PUT', HOOK, { body: { ...hook, headers } });
    assert.is(res.status, 204, JSON.stringify(res.body));
    assert.equal((await get(HOOK)).headers, headers);
  });

  t.run();
}

forEachBackend(keyedSuite);
