/**
 * `fields` over HTTP: a,b · a/b · a/[b,c] · a=x/b · nesting, on single
 * objects, lists, GET /v1/config (objects of mixed types: applied per object, no unknown-field
 * check) and /v1/state; unknown fields and syntax errors → 400 with parameter and position.
 * Also how objects are presented beside fields: with-defaults (alone, true, report-all, trim,
 * explicit, false) from the schema defaults, and content=config|nonconfig|all on state reads.
 * Each suite runs against both stores (Redis DB 8).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { useApi } from '../helpers/api.js';
import { byPath, names, ok, q, rejected, seed } from './http-query-fixtures.js';
import { forEachBackend, type Backend } from '../helpers/backends.js';

function fieldsSuite(backend: Backend): void {
  const t = suite(`http fields (${backend})`);
  const api = useApi(t, backend, { db: 8, setup: seed });

  const single = [
    ['a,b', 'name,type', { name: 'site-a', type: 'edge' }],
    ['a/b', 'labels/env', { labels: { env: 'prod' } }],
    ['a/[b,c]', 'labels/[env,region]', { labels: { env: 'prod', region: 'eu' } }],
    ['a=x/b renames a', 'labels=tags/region', { tags: { region: 'eu' } }],
    ['renaming a leaf', 'name=id,topology/parent-site=parent', { id: 'site-a', topology: { parent: 'tower' } }],
    [
      'nesting through a list',
      'name,hosts/[host-id,labels/gpu]',
      { name: 'site-a', hosts: [{ 'host-id': 'h1', labels: { gpu: 'yes' } }, { 'host-id': 'h2' }] },
    ],
    ['whole wins over part', 'labels,labels/env', { labels: { env: 'prod', region: 'eu' } }],
    ['an ordered list whole', 'management-ipv4-access-list', { 'management-ipv4-access-list': ['10.0.0.0/8'] }],
    ['blanks around names', ' name , labels / env ', { name: 'site-a', labels: { env: 'prod' } }],
  ] as const;
  for (const [what, fields, want] of single) {
    t(`single object: ${what} (${fields})`, async () => {
      assert.equal(await ok(api, `/v1/config/sites/site-a?fields=${q(fields)}`), want);
      // The state of the same object answers the same projection (no runtime fields on sites).
      assert.equal(await ok(api, `/v1/state/sites/site-a?fields=${q(fields)}`), want);
    });
  }

  t('single object: nothing selected present → {}', async () => {
    assert.equal(await ok(api, `/v1/config/sites/tower?fields=${q('hosts/host-id')}`), {});
  });

  t('lists: projection per item; items lacking every field stay as {}', async () => {
    assert.equal(await ok(api, `/v1/config/sites?fields=${q('name,labels/env')}`), [
      { name: 'site-a', labels: { env: 'prod' } },
      { name: 'site-b', labels: { env: 'dev' } },
      { name: 'tower', labels: { env: 'prod' } },
      { name: 'xeno' },
    ]);
    assert.equal(await ok(api, `/v1/config/sites?fields=${q('hosts/host-id')}`), [
      { hosts: [{ 'host-id': 'h1' }, { 'host-id': 'h2' }] },
      { hosts: [{ 'host-id': 'h3' }] },
      {},
      {},
    ]);
    assert.equal(
      await ok(api, `/v1/config/volga/webhooks?fields=${q('name=n,site-placement/[all-sites,match-site-labels]')}`),
      [
        { n: 'hook-a', 'site-placement': { 'all-sites': true } },
        { n: 'hook-b', 'site-placement': { 'match-site-labels': 'env = prod' } },
      ],
    );
  });

  t('lists: fields with where keeps where on the whole object', async () => {
    assert.equal(await ok(api, `/v1/config/sites?fields=name&where=${q("labels/env = 'prod'")}`), [
      { name: 'site-a' },
      { name: 'tower' },
    ]);
  });

  t('state lists and objects: runtime fields can be selected', async () => {
    assert.equal(await ok(api, `/v1/state/application-deployments?fields=${q('name,status/selected-sites')}`), [
      { name: 'dep1', status: { 'selected-sites': ['site-a', 'tower'] } },
    ]);
    assert.equal(await ok(api, `/v1/state/application-deployments/dep1?fields=${q('status/selected-sites=sites')}`), {
      status: { sites: ['site-a', 'tower'] },
    });
    assert.equal(await ok(api, `/v1/state/volga/webhooks/hook-b?fields=${q('name,status')}`), {
      name: 'hook-b',
      status: 'starting',
    });
    assert.equal(await names(api, `/v1/state/volga/webhooks?fields=${q('name,status')}`), ['hook-a', 'hook-b']);
    // The exporter's own members: counters, topic-lag's members, the fleet's rows.
    assert.equal(
      await ok(api, `/v1/state/volga/webhooks/hook-b?fields=${q('name,delivered,topic-lag/lag,sites/site')}`),
      {
        name: 'hook-b',
        delivered: 0,
        'topic-lag': [],
        sites: [{ site: 'site-a' }, { site: 'tower' }],
      },
    );
  });

  t('GET /v1/config: fields per object of mixed types, x-path always kept', async () => {
    const all = byPath(await ok(api, `/v1/config?fields=${q('name,default-domain,labels/env')}`));
    assert.equal(all.get('/v1/config/sites/site-a'), {
      'x-path': '/v1/config/sites/site-a',
      name: 'site-a',
      labels: { env: 'prod' },
    });
    assert.equal(all.get('/v1/config/sites/xeno'), { 'x-path': '/v1/config/sites/xeno', name: 'xeno' });
    assert.equal(all.get('/v1/config/system/settings'), {
      'x-path': '/v1/config/system/settings',
      'default-domain': 'example.test',
    });
    assert.equal(all.get('/v1/config/applications/app1'), { 'x-path': '/v1/config/applications/app1', name: 'app1' });
    // A field only some types have is no error here: the other objects keep their x-path only.
    const only = byPath(await ok(api, `/v1/config?fields=version`));
    assert.equal(only.get('/v1/config/applications/app1'), {
      'x-path': '/v1/config/applications/app1',
      version: '1.0',
    });
    assert.equal(only.get('/v1/config/sites/site-a'), { 'x-path': '/v1/config/sites/site-a' });
  });

  t('GET /v1/state: fields per object, with runtime and system objects', async () => {
    const all = byPath(await ok(api, `/v1/state?fields=${q('name,status/selected-sites,domain')}`));
    assert.equal(all.get('/v1/state/application-deployments/dep1'), {
      'x-path': '/v1/state/application-deployments/dep1',
      name: 'dep1',
      status: { 'selected-sites': ['site-a', 'tower'] },
    });
    assert.equal(all.get('/v1/state/system/dns-zones/default'), {
      'x-path': '/v1/state/system/dns-zones/default',
      name: 'default',
      domain: 'example.test',
    });
    assert.equal(all.get('/v1/state/sites/tower'), { 'x-path': '/v1/state/sites/tower', name: 'tower' });
  });

  t('YAML: a list with fields is one document per object', async () => {
    const res = await api.req('GET', `/v1/config/sites?fields=name&where=${q("type = 'control-tower'")}`, {
      headers: { accept: 'application/yaml' },
    });
    assert.is(res.status, 200);
    assert.is(await res.text(), '---\nname: tower\n');
  });

  // [where, value, code, position]; positions are 0-based offsets into the parameter's value.
  const errors = [
    ['unknown field', 'name,colour', 'unknown-field', 5],
    ['unknown nested field', 'name,hosts/serial', 'unknown-field', 11],
    ['unknown field inside brackets', 'labels/env,topology/[parent-site,child]', 'unknown-field', 33],
    ['unknown field under a rename', 'topology=t/parent', 'unknown-field', 11],
    ['trailing comma', 'name,', 'syntax', 5],
    ['empty', '', 'syntax', 0],
    ['unclosed bracket', 'labels/[env', 'syntax', 11],
    ['missing new name', 'name=', 'syntax', 5],
    ['double slash', 'labels//env', 'syntax', 7],
    ['text after the end', 'labels/[env]x', 'syntax', 12],
    ['renamed two ways', 'labels=a/env,labels=b/region', 'conflicting-rename', 13],
  ] as const;
  for (const [what, fields, code, position] of errors) {
    t(`400 on a list: ${what} (${JSON.stringify(fields)})`, async () => {
      await rejected(api, `/v1/config/sites?fields=${q(fields)}`, 'fields', code, position);
    });
  }

  t('400 on single objects (config and state) and on state lists', async () => {
    await rejected(api, `/v1/config/sites/site-a?fields=${q('name,colour')}`, 'fields', 'unknown-field', 5);
    await rejected(api, `/v1/state/sites/site-a?fields=${q('name,colour')}`, 'fields', 'unknown-field', 5);
    await rejected(api, `/v1/state/sites?fields=${q('name,colour')}`, 'fields', 'unknown-field', 5);
    await rejected(api, `/v1/state/application-deployments/dep1?fields=${q('status/x')}`, 'fields', 'unknown-field', 7);
    await rejected(api, `/v1/state/volga/webhooks/hook-b?fields=${q('name,deliverd')}`, 'fields', 'unknown-field', 5);
    await rejected(api, `/v1/state/volga/webhooks?fields=${q('topic-lag/lagg')}`, 'fields', 'unknown-field', 10);
    await rejected(
      api,
      `/v1/state/application-deployments?fields=${q('status/selected-sites,')}`,
      'fields',
      'syntax',
      22,
    );
  });

  t('400 on GET /v1/config and /v1/state for syntax errors (unknown names are allowed there)', async () => {
    await rejected(api, `/v1/config?fields=${q('name,[')}`, 'fields', 'syntax', 5);
    await rejected(api, `/v1/state?fields=${q('a=b=c')}`, 'fields', 'syntax', 3);
  });

  const hookB = {
    name: 'hook-b',
    topics: ['t2'],
    'site-placement': { 'match-site-labels': 'env = prod' },
    url: 'http://example.test/b',
    data: 'x',
  };
  const hookBDefaults = {
    ...hookB,
    'start-position': 'end',
    'tls-verify': true,
    'use-root-ca-certs': true,
    tries: 0,
    'data-format': 'string',
    'max-in-flight': 1,
    'retry-interval': '1s',
    'max-retry-interval': '60s',
    enabled: true,
  };
  const withDefaults = [
    ['', hookBDefaults, { name: 'xeno', type: 'edge' }],
    ['=true', hookBDefaults, { name: 'xeno', type: 'edge' }],
    ['=report-all', hookBDefaults, { name: 'xeno', type: 'edge' }],
    ['=explicit', hookB, { name: 'xeno', type: 'edge' }],
    ['=false', hookB, { name: 'xeno', type: 'edge' }],
    ['=trim', hookB, { name: 'xeno' }],
  ] as const;
  for (const [param, hook, xeno] of withDefaults) {
    t(`with-defaults${param}: one object, a list, GET /v1/config`, async () => {
      assert.equal(await ok(api, `/v1/config/volga/webhooks/hook-b?with-defaults${param}`), hook);
      assert.equal(await ok(api, `/v1/config/sites/xeno?with-defaults${param}`), xeno);
      const list = (await ok(api, `/v1/config/volga/webhooks?with-defaults${param}`)) as unknown[];
      assert.equal(list[1], hook);
      const all = byPath(await ok(api, `/v1/config?with-defaults${param}&match-path=${q('/v1/config/sites/xeno')}`));
      assert.equal([...all.values()], [{ 'x-path': '/v1/config/sites/xeno', ...xeno }]);
    });
  }

  t(
    'with-defaults: trim keeps values that differ from the default; state objects too; fields see defaults',
    async () => {
      const a = (await ok(api, '/v1/config/volga/webhooks/hook-a?with-defaults=trim')) as Record<string, unknown>;
      assert.equal([a['start-position'], a.tries], ['beginning', 3]);
      const state = (await ok(api, '/v1/state/volga/webhooks/hook-b?with-defaults')) as Record<string, unknown>;
      assert.equal([state.status, state['retry-interval'], state.name], ['starting', '1s', 'hook-b']);
      assert.equal(await ok(api, `/v1/config/volga/webhooks?fields=${q('name,tries')}&with-defaults`), [
        { name: 'hook-a', tries: 3 },
        { name: 'hook-b', tries: 0 },
      ]);
      assert.equal(await ok(api, `/v1/config/volga/webhooks?fields=${q('name,tries')}`), [
        { name: 'hook-a', tries: 3 },
        { name: 'hook-b' },
      ]);
    },
  );

  t('content on state reads: config, nonconfig, all (default); name always kept', async () => {
    const dep = { name: 'dep1', 'application-name': 'app1', placement: { 'match-site-labels': 'env = prod' } };
    const status = { 'selected-sites': ['site-a', 'tower'] };
    assert.equal(await ok(api, '/v1/state/application-deployments/dep1?content=config'), dep);
    assert.equal(await ok(api, '/v1/state/application-deployments/dep1?content=nonconfig'), { name: 'dep1', status });
    assert.equal(await ok(api, '/v1/state/application-deployments/dep1?content=all'), { ...dep, status });
    assert.equal(await ok(api, '/v1/state/application-deployments/dep1'), { ...dep, status });
    assert.equal(await ok(api, '/v1/state/application-deployments?content=nonconfig'), [{ name: 'dep1', status }]);
    assert.equal(await ok(api, '/v1/state/volga/webhooks?content=nonconfig&fields=name,status'), [
      { name: 'hook-a', status: 'starting' },
      { name: 'hook-b', status: 'starting' },
    ]);
    const all = byPath(
      await ok(api, `/v1/state?content=nonconfig&match-path=${q('/v1/state/application-deployments/*')}`),
    );
    assert.equal([...all.values()], [{ 'x-path': '/v1/state/application-deployments/dep1', name: 'dep1', status }]);
    // Where sees the filtered object: the configured name of the application is gone with nonconfig.
    assert.equal(
      await ok(
        api,
        `/v1/state/application-deployments?content=nonconfig&count&where=${q("application-name = 'app1'")}`,
      ),
      { count: 0 },
    );
    assert.equal(
      await ok(api, `/v1/state/application-deployments?content=config&count&where=${q("application-name = 'app1'")}`),
      { count: 1 },
    );
  });

  t('400: bad with-defaults and content values, content on a config read', async () => {
    await rejected(api, '/v1/config/sites?with-defaults=all', 'with-defaults', 'bad-value');
    await rejected(api, '/v1/config?with-defaults=yes', 'with-defaults', 'bad-value');
    await rejected(api, '/v1/state/sites?content=everything', 'content', 'bad-value');
    await rejected(api, '/v1/state?content=', 'content', 'bad-value');
    await rejected(api, '/v1/config/sites?content=config', 'content', 'unknown-parameter');
  });

  t.run();
}

forEachBackend(fieldsSuite);
