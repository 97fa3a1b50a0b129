/**
 * `where` over HTTP (seed 4.7, issue 4 item 2): every example form of the seed on sites and
 * webhooks (config and state), on GET /v1/config and /v1/state, on one state object; re-match
 * through re2js, match-labels through the label expression; syntax errors → 400 with the
 * parameter, the code and the position inside the where text. Both stores (Redis DB 9).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { kvPrefix } from '../src/model/keys.js';
import { startApi, type Backend, type TestApi } from './helpers/api.js';
import { bad, byPath, names, ok, q, rejected, seed } from './http-query-fixtures.js';

function whereSuite(backend: Backend): void {
  const t = suite(`http where (${backend})`);
  let api: TestApi;
  t.before(async () => { api = await startApi(backend, { db: 9 }); await seed(api); });
  t.after(async () => { await api.close(); });

  // [expression, names of the sites it selects]; the seed's forms first, then what they stand for.
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
    const hooks = (expr: string) => names(api, `/v1/state/volga/webhooks?where=${q(expr)}`);
    assert.equal(await hooks("status = 'starting'"), ['hook-a', 'hook-b']);
    // What an exporter process records for hook-a (the state an API process reads back).
    await api.instance.deps.store.kvSet(`${kvPrefix.webhookState}default/hook-a`, JSON.stringify({ status: 'ready', delivered: 5, 'consumed-topics': ['t1'] }));
    assert.equal(await hooks("status = 'ready' and delivered > 0"), ['hook-a']);
    assert.equal(await hooks("consumed-topics = 't1'"), ['hook-a']);
    assert.equal(await hooks("status != 'ready'"), ['hook-b']);
  });

  t('state: deployments by their selected sites', async () => {
    assert.equal(await names(api, `/v1/state/application-deployments?where=${q("status/selected-sites = 'tower'")}`), ['dep1']);
    assert.equal(await names(api, `/v1/state/application-deployments?where=${q('count(status/selected-sites) = 1')}`), []);
  });

  t('one state object: where decides 200 or 404', async () => {
    assert.equal(await ok(api, `/v1/state/sites/site-a?fields=name&where=${q("type = 'edge'")}`), { name: 'site-a' });
    const info = await bad(api, `/v1/state/sites/tower?where=${q("type = 'edge'")}`, 404);
    assert.is(info.code, 'no-match');
  });

  t('GET /v1/config and /v1/state: where per object, objects of every type', async () => {
    assert.equal([...byPath(await ok(api, `/v1/config?where=${q("labels/env = 'prod'")}`)).keys()], ['/v1/config/sites/site-a', '/v1/config/sites/tower']);
    assert.equal([...byPath(await ok(api, `/v1/config?where=${q("default-domain = 'example.test' or version = '1.0'")}`)).keys()], ['/v1/config/applications/app1', '/v1/config/system/settings']);
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
    ["type = ", 'syntax', 7],
    ["type == 'edge'", 'syntax', 6],
    ["type = 'edge", 'unterminated-string', 7],
    ["type = 'edge' and", 'syntax', 17],
    ["(type = 'edge'", 'syntax', 14],
    ['type = edge)', 'syntax', 11],
    ['foo(name)', 'unknown-function', 0],
    ['starts-with(name)', 'arity', 0],
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

  t.run();
}

whereSuite('embedded');
whereSuite('redis');
