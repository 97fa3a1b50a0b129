/**
 * ETags and the order of sets (CONTRACT §5 "Arrays"), both stores: an array the contract
 * treats as a set (an exporter's `topics`, `variables` keyed by name, a site's `hosts` keyed
 * by `host-id`, a user's `policies`) written in another order is the same content, so the
 * ETag does not change and no revision is made; reordering an ordered list (`headers`,
 * `management-ipv4-access-list`, policy `rules`) changes it.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { startApi, type TestApi } from '../helpers/api.js';
import { forEachBackend, type Backend } from '../helpers/backends.js';

const hook = (topics: string[], variables: string[], headers: string[]) => ({
  topics,
  'site-placement': { 'all-sites': true },
  url: 'http://127.0.0.1:9/in',
  data: '${MSG}',
  variables: variables.map((name) => ({ name, 'value-from-message': { 'json-pointer': '/payload/' + name } })),
  headers: headers.map((name) => ({ name, value: 'v' })),
});

async function putEtag(api: TestApi, path: string, body: unknown): Promise<string> {
  const res = await api.json('PUT', path, { body });
  assert.ok(res.status === 201 || res.status === 204, `${path}: ${res.status} ${JSON.stringify(res.body)}`);
  const etag = res.headers.get('etag');
  assert.ok(etag, 'an ETag');
  return etag;
}

function setSuite(backend: Backend): void {
  const t = suite(`set etags (${backend})`);
  let api: TestApi;
  t.before(async () => {
    api = await startApi(backend, { db: 3 });
  });
  t.after(async () => {
    await api.close();
  });

  t('an exporter: topics and variables reordered → same ETag, no revision; headers reordered → new ETag', async () => {
    const path = '/v1/config/volga/webhooks/sets';
    const first = await putEtag(api, path, hook(['b', 'a', 'c'], ['Y', 'X'], ['h1', 'h2']));
    const revisions = async () => (await api.json('GET', '/v1/state/config-revisions?count')).body;
    const before = await revisions();
    assert.is(await putEtag(api, path, hook(['c', 'a', 'b'], ['X', 'Y'], ['h1', 'h2'])), first);
    assert.equal(await revisions(), before, 'no revision for a reordered set');
    const got = await api.json('GET', path);
    assert.is(got.headers.get('etag'), first);
    assert.equal((got.body as { topics: string[] }).topics, ['a', 'b', 'c'], 'a set is kept in its canonical order');
    const reordered = await putEtag(api, path, hook(['a', 'b', 'c'], ['X', 'Y'], ['h2', 'h1']));
    assert.is.not(reordered, first, 'headers are ordered');
    // A merge patch that adds a topic already there changes nothing.
    const patched = await api.json('PATCH', path, { body: { topics: ['c', 'a'] } });
    assert.is(patched.status, 204);
    assert.is(patched.headers.get('etag'), reordered);
  });

  t('a site: hosts reordered → same ETag; management-ipv4-access-list reordered → new ETag', async () => {
    const path = '/v1/config/sites/set-site';
    const site = (hosts: string[], acl: string[]) => ({
      hosts: hosts.map((id) => ({ 'host-id': id, labels: { role: id } })),
      'management-ipv4-access-list': acl,
    });
    const first = await putEtag(api, path, site(['h2', 'h1'], ['10.0.0.0/8', '192.168.0.0/16']));
    assert.is(await putEtag(api, path, site(['h1', 'h2'], ['10.0.0.0/8', '192.168.0.0/16'])), first);
    assert.is.not(await putEtag(api, path, site(['h1', 'h2'], ['192.168.0.0/16', '10.0.0.0/8'])), first);
  });

  t('a user: policies reordered → same ETag; a policy: rules reordered → new ETag', async () => {
    const rule = (path: string) => ({ path, operations: ['read'], effect: 'allow' });
    const policy = (paths: string[]) => ({ rules: paths.map(rule) });
    const p1 = await putEtag(api, '/v1/config/system/policies/p1', policy(['/a', '/b']));
    assert.is.not(await putEtag(api, '/v1/config/system/policies/p1', policy(['/b', '/a'])), p1);
    await putEtag(api, '/v1/config/system/policies/p2', policy(['/c']));
    const user = (policies: string[]) => ({ password: 'set-etag-password-1', policies });
    const u1 = await putEtag(api, '/v1/config/system/users/set-user', user(['p2', 'p1']));
    assert.is(await putEtag(api, '/v1/config/system/users/set-user', user(['p1', 'p2'])), u1);
  });

  t.run();
}

forEachBackend(setSuite);
