/**
 * Every resource of the registry goes through create / read / update / delete over HTTP, and
 * the system fields of /v1/state: with-defaults on a webhook, a deployment's selected sites
 * from site labels, the `default` DNS zone, a webhook's status. Both stores (Redis DB 10).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { useApi } from '../helpers/api.js';
import { forEachBackend, type Backend } from '../helpers/backends.js';
import { firstProblem } from '../helpers/assert.js';

type Case = {
  /** Config path of the list (or of the singleton object). */
  list: string;
  /** Path of the object created. */
  path: string;
  create: Record<string, unknown>;
  /** A plain patch, and what the object shows afterwards (config read). */
  patch: Record<string, unknown>;
  expect: Record<string, unknown>;
};

/** In dependency order: a vault before its secret; deleted in reverse. */
const cases: Case[] = [
  {
    list: 'volga/webhooks',
    path: 'volga/webhooks/w1',
    create: {
      name: 'w1',
      topics: ['t1'],
      'site-placement': { 'all-sites': true },
      url: 'http://example.test/${TOPIC}',
      data: '${MSG}',
    },
    patch: { tries: 3 },
    expect: {
      name: 'w1',
      topics: ['t1'],
      'site-placement': { 'all-sites': true },
      url: 'http://example.test/${TOPIC}',
      data: '${MSG}',
      tries: 3,
    },
  },
  {
    list: 'applications',
    path: 'applications/a1',
    create: { name: 'a1', version: '1.0', services: [{ name: 'web', image: 'nginx' }] },
    patch: { version: '1.1' },
    expect: { name: 'a1', version: '1.1', services: [{ name: 'web', image: 'nginx' }] },
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
    expect: {
      name: 'd1',
      'application-name': 'a1',
      'application-version': '1.1',
      placement: { 'match-site-labels': 'zone = north' },
    },
  },
  {
    list: 'sites',
    path: 'sites/s1',
    create: {
      name: 's1',
      type: 'edge',
      labels: { zone: 'north' },
      topology: { 'parent-site': 'hq' },
      hosts: [{ 'host-id': 'h1', labels: { gpu: 'yes' } }],
      'management-ipv4-access-list': ['10.0.0.0/8'],
    },
    patch: { 'management-ipv4-access-list': ['192.168.0.0/16'] },
    expect: {
      name: 's1',
      type: 'edge',
      labels: { zone: 'north' },
      topology: { 'parent-site': 'hq' },
      hosts: [{ 'host-id': 'h1', labels: { gpu: 'yes' } }],
      'management-ipv4-access-list': ['192.168.0.0/16'],
    },
  },
  {
    list: 'system/settings',
    path: 'system/settings',
    create: { 'default-domain': 'corp.example' },
    patch: { 'default-domain': 'edge.example' },
    expect: { 'default-domain': 'edge.example' },
  },
  {
    list: 'system/dns-zones',
    path: 'system/dns-zones/z1',
    create: { name: 'z1', domain: 'z1.example' },
    patch: { domain: 'z1.example.org' },
    expect: { name: 'z1', domain: 'z1.example.org' },
  },
  {
    list: 'strongbox/vaults',
    path: 'strongbox/vaults/v1',
    create: { name: 'v1' },
    patch: { description: 'team vault' },
    expect: { name: 'v1', description: 'team vault' },
  },
  {
    list: 'strongbox/vaults/v1/secrets',
    path: 'strongbox/vaults/v1/secrets/s1',
    create: { name: 's1', data: { user: 'u1' } },
    patch: { data: { pass: 'p1' } },
    expect: { name: 's1', data: { user: '(secret)', pass: '(secret)' } },
  },
  {
    list: 'system/policies',
    path: 'system/policies/p1',
    create: { name: 'p1', rules: [{ path: '/v1/config/applications/**', operations: ['read'], effect: 'allow' }] },
    patch: { rules: [{ path: '/v1/state/**', operations: ['read'], effect: 'allow' }] },
    expect: { name: 'p1', rules: [{ path: '/v1/state/**', operations: ['read'], effect: 'allow' }] },
  },
  {
    list: 'system/users',
    path: 'system/users/u1',
    create: { name: 'u1', password: 'a-long-password', policies: ['p1'] },
    patch: { policies: ['p2'] },
    expect: { name: 'u1', policies: ['p1', 'p2'] },
  },
  {
    list: 'system/tenants',
    path: 'system/tenants/t1',
    create: { name: 't1' },
    patch: { description: 'first tenant' },
    expect: { name: 't1', description: 'first tenant' },
  },
];

function resourceSuite(backend: Backend): void {
  const t = suite(`api-resources (${backend})`);
  const api = useApi(t, backend, { db: 10 });

  t('every resource: create 201, read 200, update 204 (merged), read back', async () => {
    for (const c of cases) {
      const isObjectShape = c.list === c.path;
      const created = isObjectShape
        ? await api.json('PUT', `/v1/config/${c.path}`, { body: c.create })
        : await api.json('POST', `/v1/config/${c.list}`, { body: c.create });
      assert.is(created.status, 201, `${c.path}: ${JSON.stringify(created.body)}`);
      const read = await api.json('GET', `/v1/config/${c.path}`);
      assert.is(read.status, 200, c.path);
      assert.match(read.headers.get('etag') ?? '', /^"[^"]+"$/, c.path);
      const patched = await api.json('PATCH', `/v1/config/${c.path}`, { body: c.patch });
      assert.is(patched.status, 204, `${c.path}: ${JSON.stringify(patched.body)}`);
      const after = await api.json('GET', `/v1/config/${c.path}`);
      assert.equal(after.body, c.expect, c.path);
      assert.not.equal(after.headers.get('etag'), read.headers.get('etag'), c.path);
    }
  });

  t('a user read never shows the password or its hash', async () => {
    const read = await api.json('GET', '/v1/config/system/users/u1');
    assert.not.ok('password' in (read.body as object));
    assert.not.ok(JSON.stringify(read.body).includes('a-long-password'));
  });

  t('with-defaults report-all shows schema defaults on a webhook; trim and explicit do not', async () => {
    const all = await api.json('GET', '/v1/config/volga/webhooks/w1?with-defaults');
    assert.is(all.status, 200);
    const v = all.body as Record<string, unknown>;
    assert.is(v['start-position'], 'end');
    assert.is(v['data-format'], 'string');
    assert.is(v['tls-verify'], true);
    assert.is(v['use-root-ca-certs'], true);
    assert.is(v['max-in-flight'], 1);
    assert.is(v['retry-interval'], '1s');
    assert.is(v.tries, 3);
    const explicit = await api.json('GET', '/v1/config/volga/webhooks/w1?with-defaults=explicit');
    assert.equal(explicit.body, cases[0]?.expect);
    await api.json('PATCH', '/v1/config/volga/webhooks/w1', { body: { 'start-position': 'end' } });
    const trim = (await api.json('GET', '/v1/config/volga/webhooks/w1?with-defaults=trim')).body as Record<
      string,
      unknown
    >;
    assert.not.ok('start-position' in trim);
    assert.is(trim.tries, 3);
  });

  t('state of a deployment: status/selected-sites from site labels (own and host labels)', async () => {
    await api.json('PUT', '/v1/config/sites/s2', { body: { name: 's2', labels: { zone: 'south' } } });
    await api.json('PUT', '/v1/config/sites/s3', {
      body: { name: 's3', hosts: [{ 'host-id': 'x', labels: { zone: 'north' } }] },
    });
    const st = await api.json('GET', '/v1/state/application-deployments/d1');
    assert.is(st.status, 200);
    const body = st.body as { status?: { 'selected-sites'?: string[] }; 'application-name'?: string };
    assert.is(body['application-name'], 'a1');
    assert.equal(body.status?.['selected-sites']?.slice().sort(), ['s1', 's3']);
    await api.json('PATCH', '/v1/config/application-deployments/d1', {
      body: { placement: { 'match-site-labels': 'zone = south or system/name = s1' } },
    });
    const st2 = (await api.json('GET', '/v1/state/application-deployments/d1')).body as {
      status?: { 'selected-sites'?: string[] };
    };
    assert.equal(st2.status?.['selected-sites']?.slice().sort(), ['s1', 's2']);
  });

  t('state of dns-zones includes default (settings/default-domain) besides configured zones', async () => {
    const st = await api.json('GET', '/v1/state/system/dns-zones');
    assert.is(st.status, 200);
    const zones = st.body as Array<{ name: string; domain: string }>;
    assert.equal(
      zones.find((z) => z.name === 'default'),
      { name: 'default', domain: 'edge.example' },
    );
    assert.equal(
      zones.find((z) => z.name === 'z1'),
      { name: 'z1', domain: 'z1.example.org' },
    );
    const one = await api.json('GET', '/v1/state/system/dns-zones/default');
    assert.equal(one.body, { name: 'default', domain: 'edge.example' });
    assert.is((await api.json('GET', '/v1/config/system/dns-zones/default')).status, 404);
  });

  t(
    'the DNS zone default is the default domain: writing it is a 400 naming system/settings/default-domain',
    async () => {
      const writes: Array<[string, string, unknown]> = [
        ['PUT', '/v1/config/system/dns-zones/default', { name: 'default', domain: 'other.example' }],
        ['POST', '/v1/config/system/dns-zones', { name: 'default', domain: 'other.example' }],
        ['PATCH', '/v1/config', [{ 'x-path': '/v1/config/system/dns-zones/default', domain: 'other.example' }]],
      ];
      for (const [method, path, body] of writes) {
        const r = await api.json(method, path, { body });
        assert.is(r.status, 400, `${method} ${path}: ${JSON.stringify(r.body)}`);
        const p = firstProblem(r.body);
        assert.is(p.code, 'reserved-name');
        assert.is(p.setting, '/v1/config/system/settings/default-domain');
        assert.match(
          String((r.body as { errors: Array<{ 'error-message': string }> }).errors[0]?.['error-message']),
          /default-domain/,
        );
      }
      // state and SYS_DNS_ZONES keep agreeing: still the settings' domain
      const one = await api.json('GET', '/v1/state/system/dns-zones/default');
      assert.equal(one.body, { name: 'default', domain: 'edge.example' });
    },
  );

  t('state of a webhook shows a status; content=config leaves it out', async () => {
    const st = await api.json('GET', '/v1/state/volga/webhooks/w1');
    assert.is(st.status, 200);
    const body = st.body as { status?: unknown; url?: unknown };
    assert.ok(['starting', 'ready', 'error', 'stopped'].includes(String(body.status)), String(body.status));
    assert.is(body.url, 'http://example.test/${TOPIC}');
    const cfg = (await api.json('GET', '/v1/state/volga/webhooks/w1?content=config')).body as Record<string, unknown>;
    assert.not.ok('status' in cfg);
    assert.is(cfg.url, 'http://example.test/${TOPIC}');
    const non = (await api.json('GET', '/v1/state/volga/webhooks/w1?content=nonconfig')).body as Record<
      string,
      unknown
    >;
    assert.ok('status' in non);
    assert.not.ok('url' in non);
  });

  t('a vault that still holds a secret cannot be deleted (409), nothing changes', async () => {
    const before = (await api.json('GET', '/v1/config/strongbox/vaults/v1')).headers.get('etag');
    const res = await api.json('DELETE', '/v1/config/strongbox/vaults/v1');
    assert.is(res.status, 409);
    assert.is((res.body as { errors: Array<{ 'error-info': string }> }).errors[0]?.['error-info'], 'in-use');
    assert.is((await api.json('GET', '/v1/config/strongbox/vaults/v1')).headers.get('etag'), before);
  });

  t('every resource: delete 204 (reverse order), then 404 on config and state (the singleton: {})', async () => {
    for (const c of [...cases].reverse()) {
      const res = await api.json('DELETE', `/v1/config/${c.path}`);
      assert.is(res.status, 204, `${c.path}: ${JSON.stringify(res.body)}`);
      // The singleton exists in effect when not written: {} in config, its defaults in state.
      const singleton = c.path === 'system/settings';
      assert.is((await api.json('GET', `/v1/config/${c.path}`)).status, singleton ? 200 : 404, c.path);
      if (!singleton) assert.is((await api.json('GET', `/v1/state/${c.path}`)).status, 404, `state ${c.path}`);
    }
  });

  t.run();
}

forEachBackend(resourceSuite);
