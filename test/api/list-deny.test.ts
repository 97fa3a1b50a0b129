/**
 * A policy that denies reading one object hides it from list reads too (config and state, with
 * fields, where, keys and count), as it does from a read of the whole tree.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { useApi } from '../helpers/api.js';
import { forEachBackend, type Backend } from '../helpers/backends.js';

function run(backend: Backend): void {
  const t = suite(`list reads honour a deny on one member (${backend})`);
  const api = useApi(t, backend);
  const hook = (name: string) => ({
    name,
    topics: ['t'],
    'site-placement': { 'all-sites': true },
    url: `http://127.0.0.1:9/${name}`,
    data: 'x',
  });
  let token = '';

  t.before(async () => {
    for (const name of ['open-hook', 'hidden-hook'])
      assert.is((await api.json('PUT', `/v1/config/volga/webhooks/${name}`, { body: hook(name) })).status, 201);
    const rules = [
      { path: '/v1/**', operations: ['read'], effect: 'allow' },
      { path: '/v1/config/volga/webhooks/hidden-hook', operations: ['read'], effect: 'deny' },
      { path: '/v1/state/volga/webhooks/hidden-hook', operations: ['read'], effect: 'deny' },
    ];
    assert.is((await api.json('PUT', '/v1/config/system/policies/nohook', { body: { rules } })).status, 201);
    const user = { password: 'nohook-password-1', policies: ['nohook'] };
    assert.is((await api.json('PUT', '/v1/config/system/users/nh', { body: user })).status, 201);
    const login = await api.json('POST', '/v1/login', { body: { username: 'nh', password: 'nohook-password-1' } });
    token = (login.body as { token: string }).token;
  });

  const get = async (path: string) => {
    const res = await api.json('GET', path, { headers: { authorization: `Bearer ${token}` } });
    assert.is(res.status, 200, JSON.stringify(res.body));
    return res.body;
  };

  t('config and state lists leave the denied member out', async () => {
    for (const tree of ['config', 'state']) {
      const base = `/v1/${tree}/volga/webhooks`;
      assert.equal(await get(`${base}?keys`), ['open-hook'], tree);
      assert.equal(await get(`${base}?count`), { count: 1 }, tree);
      assert.equal(await get(`${base}?fields=url`), [{ url: 'http://127.0.0.1:9/open-hook' }], tree);
      assert.equal(await get(`${base}?keys&where=${encodeURIComponent("contains(url, 'hidden')")}`), [], tree);
    }
    const denied = await api.json('GET', '/v1/config/volga/webhooks/hidden-hook', {
      headers: { authorization: `Bearer ${token}` },
    });
    assert.is(denied.status, 403);
  });

  t.run();
}

forEachBackend(run);
