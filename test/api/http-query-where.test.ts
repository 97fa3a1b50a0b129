/**
 * `where` over HTTP: every example form of the where language on sites and
 * webhooks (config and state), on GET /v1/config and /v1/state, on one state object; re-match
 * through re2js, match-labels through the label expression; syntax errors → 400 with the
 * parameter, the code and the position inside the where text.
 * Also the other parameters that choose what a read returns: match-path (items 3), keys, count,
 * send-etag, include-tenant-config, site, and the rules every parameter follows (boolean forms,
 * unknown, repeated or malformed → 400 naming it). Both stores (Redis DB 9).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { webhookStateKey } from '../../src/store/keys.js';
import { useApi } from '../helpers/api.js';
import { bad, byPath, names, ok, q, rejected, seed } from './http-query-fixtures.js';
import { forEachBackend, type Backend } from '../helpers/backends.js';

function whereSuite(backend: Backend): void {
  const t = suite(`http where (${backend})`);
  const api = useApi(t, backend, { db: 9, setup: seed });

  // [expression, names of the sites it selects]; the documented forms first, then what they stand for.
  const onSites = [
    ["type = 'edge'", ['site-a', 'site-b', 'xeno']],
    ['type = "control-tower"', ['tower']],
    // Sites have no connection state here: the empty node-set is false, its negation true.
    ["type = 'edge' and connection-state/connected = true()", []],
    ["type = 'edge' and not(connection-state/connected = true())", ['site-a', 'site-b', 'xeno']],
    ['deployed-applications > 0', []],
    ['count(hosts) > 0', ['site-a', 'site-b']],
    ["starts-with(name, 'x')", ['xeno']],
    ["contains(name, 'te-')", ['site-a', 'site-b']],
    ["re-match(name, 'regex')", []],
    ["re-match(name, '^site-[a-z]$')", ['site-a', 'site-b']],
    ["re-match(name, 'wer')", ['tower']],
    ["re-match(name, '(?i)^SITE-B$')", ['site-b']],
    ["match-labels(hosts/labels, 'gpu = yes')", ['site-a']],
    ["match-labels(labels, 'env = prod and region in {eu, us}')", ['site-a']],
    ["match-labels(labels, 'env = prod and !region')", ['tower']],
    ["match-labels(labels, 'env != prod')", ['site-b']],
    ["labels/env = 'prod' or topology/parent-site = 'tower'", ['site-a', 'tower']],
    ["type = 'edge' and labels/env != 'prod'", ['site-b']],
    ["string-compare(name, 'site-b') = -1", ['site-a']],
    ["string-compare(name, 'site-b') >= 0", ['site-b', 'tower', 'xeno']],
    ["hosts[host-id = 'h3']", ['site-b']],
    ['count(hosts) * 2 - 1 = 3', ['site-a']],
    ['count(hosts) mod 2 = 1', ['site-b']],
    ['count(hosts) div 2 = 0.5', ['site-b']],
    ['-count(hosts) < -1', ['site-a']],
    ['boolean(labels/region)', ['site-a', 'site-b']],
    ['number(string-length(name)) <= 4', ['xeno']],
    ["string(topology/parent-site) = 'tower'", ['site-a']],
    ['management-ipv4-access-list', ['site-a']],
    ['true()', ['site-a', 'site-b', 'tower', 'xeno']],
    ['false()', []],
  ] as const;
  for (const [expr, want] of onSites) {
    t(`sites: ${expr}`, async () => {
      assert.equal(await names(api, `/v1/config/sites?where=${q(expr)}`), [...want], 'config');
      assert.equal(await names(api, `/v1/state/sites?where=${q(expr)}`), [...want], 'state');
    });
  }

  t('webhooks (config): nested booleans, numbers and enumerations', async () => {
    const hooks = (expr: string) => names(api, `/v1/config/volga/webhooks?where=${q(expr)}`);
    assert.equal(await hooks("start-position = 'beginning' and site-placement/all-sites = true()"), ['hook-a']);
    assert.equal(await hooks('tries > 0'), ['hook-a']);
    assert.equal(await hooks("match-labels(site-placement, 'match-site-labels')"), ['hook-b']);
    assert.equal(await hooks("topics = 't2'"), ['hook-b']);
    assert.equal(await hooks("contains(url, '/a')"), ['hook-a']);
  });

  t('webhooks (state): runtime status and counters', async () => {
    // This site's own view (site=): at a control plane the plain read is the fleet's (CONTRACT §11),
    // where hook-a, placed on every site, is `starting` until the other sites report it.
    const own = api.instance.deps.settings.site;
    const hooks = (expr: string) => names(api, `/v1/state/volga/webhooks?site=${own}&where=${q(expr)}`);
    assert.equal(await hooks("status = 'starting'"), ['hook-a', 'hook-b']);
    // What an exporter process records for hook-a (the state an API process reads back).
    await api.instance.deps.store.kvSet(
      webhookStateKey('default', 'hook-a', api.instance.deps.settings.site),
      JSON.stringify({ status: 'ready', delivered: 5, 'consumed-topics': ['t1'] }),
    );
    assert.equal(await hooks("status = 'ready' and delivered > 0"), ['hook-a']);
    assert.equal(await hooks("consumed-topics = 't1'"), ['hook-a']);
    assert.equal(await hooks("status != 'ready'"), ['hook-b']);
    // Configuration fields read the same in the state: topics stays the configured list.
    assert.equal(await hooks("topics = 't2'"), ['hook-b']);
  });

  t('state: deployments by their selected sites', async () => {
    assert.equal(await names(api, `/v1/state/application-deployments?where=${q("status/selected-sites = 'tower'")}`), [
      'dep1',
    ]);
    assert.equal(
      await names(api, `/v1/state/application-deployments?where=${q('count(status/selected-sites) = 1')}`),
      [],
    );
  });

  t('one state object: where decides 200 or 404', async () => {
    assert.equal(await ok(api, `/v1/state/sites/site-a?fields=name&where=${q("type = 'edge'")}`), { name: 'site-a' });
    const info = await bad(api, `/v1/state/sites/tower?where=${q("type = 'edge'")}`, 404);
    assert.is(info.code, 'no-match');
  });

  t('GET /v1/config and /v1/state: where per object, objects of every type', async () => {
    assert.equal(
      [...byPath(await ok(api, `/v1/config?where=${q("labels/env = 'prod'")}`)).keys()],
      ['/v1/config/sites/site-a', '/v1/config/sites/tower'],
    );
    assert.equal(
      [...byPath(await ok(api, `/v1/config?where=${q("default-domain = 'example.test' or version = '1.0'")}`)).keys()],
      ['/v1/config/applications/app1', '/v1/config/system/settings'],
    );
    const state = byPath(await ok(api, `/v1/state?where=${q("name = 'default' or status/selected-sites = 'site-a'")}`));
    assert.equal([...state.keys()], ['/v1/state/application-deployments/dep1', '/v1/state/system/dns-zones/default']);
  });

  t('keys and count see only the matching items', async () => {
    assert.equal(await ok(api, `/v1/config/sites?keys&where=${q("labels/env = 'prod'")}`), ['site-a', 'tower']);
    assert.equal(await ok(api, `/v1/config/sites?count=true&where=${q("type = 'edge'")}`), { count: 3 });
    assert.equal(await ok(api, `/v1/state/volga/webhooks?count&where=${q('tries > 0')}`), { count: 1 });
  });

  // [expression, code, position]: position is the 0-based offset in the where text, also inside
  // a re-match regex or a match-labels expression (after its opening quote).
  const errors = [
    ['type = ', 'syntax', 7],
    ["type == 'edge'", 'syntax', 6],
    ["type = 'edge", 'unterminated-string', 7],
    ["type = 'edge' and", 'syntax', 17],
    ["(type = 'edge'", 'syntax', 14],
    ['type = edge)', 'syntax', 11],
    ['foo(name)', 'unknown-function', 0],
    ['starts-with(name)', 'wrong-arity', 0],
    ['re-match(name, name)', 'literal-required', 15],
    ["re-match(name, 'a(?=b)')", 'regex-unsupported', 17],
    ["re-match(name, '(a)\\1')", 'regex-unsupported', 19],
    ["match-labels('x', 'a = b')", 'type', 13],
    ["match-labels(labels, 'env = ')", 'syntax', 28],
    ["match-labels(labels, 'env in {a')", 'syntax', 31],
    ['name = #', 'syntax', 7],
  ] as const;
  for (const [expr, code, position] of errors) {
    t(`400: ${expr}`, async () => {
      await rejected(api, `/v1/config/sites?where=${q(expr)}`, 'where', code, position);
    });
  }

  t('400 everywhere where is accepted: state lists, one state object, /v1/config, /v1/state', async () => {
    await rejected(api, `/v1/state/sites?where=${q('type =')}`, 'where', 'syntax', 6);
    await rejected(api, `/v1/state/sites/site-a?where=${q('type =')}`, 'where', 'syntax', 6);
    await rejected(api, `/v1/config?where=${q("re-match(name, '(?<=a)b')")}`, 'where', 'regex-unsupported', 16);
    await rejected(api, `/v1/state?where=${q('= 1')}`, 'where', 'syntax', 0);
    await rejected(api, `/v1/state/volga/topics?where=${q('length >')}`, 'where', 'syntax', 8);
  });

  t('where is for lists: a single config object rejects it', async () => {
    await rejected(api, `/v1/config/sites/site-a?where=${q("type = 'edge'")}`, 'where', 'unknown-parameter');
  });

  // [pattern, x-paths it selects among the fixture's sites, hooks, settings, app, deployment]
  const configPaths = [
    ['/v1/config/sites/*', ['sites/site-a', 'sites/site-b', 'sites/tower', 'sites/xeno']],
    ['v1/config/sites/*/', ['sites/site-a', 'sites/site-b', 'sites/tower', 'sites/xeno']],
    ['/v1/config/*/site-a', ['sites/site-a']],
    ['/v1/config/*/*/hook-b', ['volga/webhooks/hook-b']],
    ['/v1/config/volga/**', ['volga/webhooks/hook-a', 'volga/webhooks/hook-b']],
    ['/v1/config/*', []],
    ['/v1/config/sites', []],
    ['/v1/config/sites/site-a/**', []],
    ['/v1/config/system/*', ['system/settings']],
    ['/v1/config/applications/app1', ['applications/app1']],
  ] as const;
  for (const [pattern, want] of configPaths) {
    t(`match-path on GET /v1/config: ${pattern}`, async () => {
      const got = [...byPath(await ok(api, `/v1/config?match-path=${q(pattern)}`)).keys()];
      assert.equal(
        got,
        want.map((p) => `/v1/config/${p}`),
      );
    });
  }

  t('match-path: ** is any descendant; combined with where and fields; on GET /v1/state', async () => {
    const system = [...byPath(await ok(api, `/v1/config?match-path=${q('/v1/config/system/**')}`)).keys()];
    assert.ok(
      system.includes('/v1/config/system/settings') && system.includes('/v1/config/system/users/admin'),
      JSON.stringify(system),
    );
    assert.ok(
      system.every((p) => p.startsWith('/v1/config/system/')),
      JSON.stringify(system),
    );
    const everything = (await ok(api, '/v1/config')) as unknown[];
    assert.is(((await ok(api, `/v1/config?match-path=${q('/v1/config/**')}`)) as unknown[]).length, everything.length);
    assert.equal(
      await ok(
        api,
        `/v1/config?match-path=${q('/v1/config/sites/*')}&where=${q("type = 'edge' and labels/env = 'prod'")}&fields=name`,
      ),
      [{ 'x-path': '/v1/config/sites/site-a', name: 'site-a' }],
    );
    const produced = await api.json('POST', '/v1/state/volga/topics/t1/produce', { body: { payload: { temp: 21 } } });
    assert.is(produced.status, 201);
    const state = (pattern: string) => ok(api, `/v1/state?match-path=${q(pattern)}`).then((b) => [...byPath(b).keys()]);
    assert.equal(await state('/v1/state/system/dns-zones/*'), ['/v1/state/system/dns-zones/default']);
    // The bus also holds the audit trail topic: every topic is one component below topics/.
    const topics = await state('/v1/state/volga/topics/*');
    assert.ok(
      topics.includes('/v1/state/volga/topics/t1') &&
        topics.every((p) => /^\/v1\/state\/volga\/topics\/[^/]+$/.test(p)),
      JSON.stringify(topics),
    );
    assert.equal(await state('/v1/state/volga/**'), [
      '/v1/state/volga/webhooks/hook-a',
      '/v1/state/volga/webhooks/hook-b',
      ...topics,
    ]);
    assert.equal(await state('/v1/state/*/dep1'), ['/v1/state/application-deployments/dep1']);
    assert.equal(await state('/v1/state/*/*/dep1'), []);
  });

  t('400: match-path errors with positions; match-path only on /v1/config and /v1/state', async () => {
    await rejected(api, `/v1/config?match-path=${q('/v1/**/sites')}`, 'match-path', 'descendant-not-last', 4);
    await rejected(api, `/v1/state?match-path=${q('/v1//sites')}`, 'match-path', 'empty-component', 4);
    await rejected(api, '/v1/config?match-path=', 'match-path', 'empty', 0);
    await rejected(api, `/v1/config?match-path=${q('/v1/config/volga/../sites/*')}`, 'match-path', 'dot-segment', 17);
    // Bad percent-encoding in any parameter: a 400 naming it (it was read as U+FFFD).
    await rejected(api, '/v1/config/volga/webhooks?fields=name%FF', 'fields', 'bad-value');
    await rejected(api, '/v1/state?where=%FF', 'where', 'bad-value');
    await rejected(api, '/v1/config?match-path=/v1/%ZZ', 'match-path', 'bad-value');
    await rejected(api, '/v1/config?match-path=/', 'match-path', 'empty', 0);
    await rejected(api, `/v1/config/sites?match-path=${q('/v1/config/sites/*')}`, 'match-path', 'unknown-parameter');
    // Paths that could match nothing: outside the read's root, or a wildcard inside a component.
    await rejected(api, `/v1/config?match-path=${q('volga/webhooks/*')}`, 'match-path', 'outside-root', 0);
    await rejected(api, `/v1/config?match-path=${q('/v1/state/volga/*')}`, 'match-path', 'outside-root', 4);
    await rejected(api, `/v1/state?match-path=${q('/v1/config/sites/*')}`, 'match-path', 'outside-root', 4);
    await rejected(api, `/v1/config?match-path=${q('/v1/config/sites/s*')}`, 'match-path', 'partial-wildcard', 18);
    // A leading wildcard, or no leading slash, stays allowed.
    assert.equal(await ok(api, `/v1/config?fields=name&match-path=${q('*/config/sites/xeno')}`), [
      { 'x-path': '/v1/config/sites/xeno', name: 'xeno' },
    ]);
    assert.equal(await ok(api, `/v1/config?fields=name&match-path=${q('v1/config/sites/xeno')}`), [
      { 'x-path': '/v1/config/sites/xeno', name: 'xeno' },
    ]);
  });

  t('keys and count: no value, true, false; on config and state lists and topics', async () => {
    const all = ['site-a', 'site-b', 'tower', 'xeno'];
    assert.equal(await ok(api, '/v1/config/sites?keys'), all);
    assert.equal(await ok(api, '/v1/config/sites?keys=true'), all);
    assert.equal(await names(api, '/v1/config/sites?keys=false'), all);
    assert.equal(await ok(api, '/v1/state/sites?keys'), all);
    assert.equal(await ok(api, '/v1/state/system/dns-zones?keys'), ['default']);
    assert.equal(await ok(api, '/v1/config/sites?count'), { count: 4 });
    assert.equal(await ok(api, '/v1/config/sites?count=true'), { count: 4 });
    assert.equal(await names(api, '/v1/config/sites?count=false'), all);
    assert.equal(await ok(api, '/v1/state/application-deployments?count'), { count: 1 });
    assert.equal(await ok(api, '/v1/config/volga/webhooks?keys'), ['hook-a', 'hook-b']);
    assert.equal(await ok(api, `/v1/state/volga/topics?count=false&keys=true&where=${q("starts-with(name, 't')")}`), [
      't1',
    ]);
  });

  t('send-etag and include-tenant-config on GET /v1/config', async () => {
    const single = await api.json('GET', '/v1/config/sites/site-a');
    for (const form of ['send-etag', 'send-etag=true']) {
      const all = byPath(await ok(api, `/v1/config?${form}&match-path=${q('/v1/config/sites/site-a')}`));
      assert.is(all.get('/v1/config/sites/site-a')?.['x-etag'], single.headers.get('etag'));
    }
    const without = byPath(await ok(api, `/v1/config?send-etag=false&match-path=${q('/v1/config/sites/*')}`));
    assert.ok([...without.values()].every((o) => !('x-etag' in o)));
    const plain = await ok(api, '/v1/config');
    // Admin of the root tenant with no subtenant: including subtenants' objects adds none.
    assert.equal(await ok(api, '/v1/config?include-tenant-config'), plain);
    assert.equal(await ok(api, '/v1/config?include-tenant-config=false'), plain);
  });

  t('site on state reads: this site answers, another is 404, an empty one is 400', async () => {
    assert.equal(await ok(api, '/v1/state/sites?site=local&keys'), ['site-a', 'site-b', 'tower', 'xeno']);
    assert.equal(await ok(api, '/v1/state/sites/xeno?site=local&fields=name'), { name: 'xeno' });
    const info = await bad(api, '/v1/state/sites?site=elsewhere', 404);
    assert.equal([info.code, info.parameter], ['unknown-site', 'site']);
    await rejected(api, '/v1/state/sites?site=', 'site', 'bad-value');
  });

  // [request, parameter, code]: every parameter follows the same rules on every read.
  const paramErrors = [
    ['/v1/config/sites?keys=yes', 'keys', 'bad-value'],
    ['/v1/state/sites?count=1', 'count', 'bad-value'],
    ['/v1/config?send-etag=on', 'send-etag', 'bad-value'],
    ['/v1/config?include-tenant-config=no', 'include-tenant-config', 'bad-value'],
    ['/v1/config/sites?keys&keys', 'keys', 'duplicate-parameter'],
    ['/v1/config/sites?fields=name&fields=type', 'fields', 'duplicate-parameter'],
    ['/v1/state?where=true()&where=false()', 'where', 'duplicate-parameter'],
    ['/v1/config?match-path=/a&match-path=/b', 'match-path', 'duplicate-parameter'],
    ['/v1/config/sites?colour=red', 'colour', 'unknown-parameter'],
    ['/v1/config/sites?Keys', 'Keys', 'unknown-parameter'],
    ['/v1/config/sites?send-etag', 'send-etag', 'unknown-parameter'],
    ['/v1/config/sites?dry-run', 'dry-run', 'unknown-parameter'],
    ['/v1/config/sites/site-a?keys', 'keys', 'unknown-parameter'],
    ['/v1/state/sites/site-a?count', 'count', 'unknown-parameter'],
    ['/v1/config/sites?site=local', 'site', 'unknown-parameter'],
    ['/v1/state/volga/topics/t1?where=true()', 'where', 'unknown-parameter'],
  ] as const;
  for (const [path, parameter, code] of paramErrors) {
    t(`400: ${path}`, async () => {
      await rejected(api, path, parameter, code);
    });
  }

  t.run();
}

forEachBackend(whereSuite);
