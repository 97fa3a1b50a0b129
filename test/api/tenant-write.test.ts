/**
 * A parent tenant writes into a subtenant's tree with `x-tenant` in a multi-object body (the
 * same field GET /v1/config?include-tenant-config shows), on both stores. The subtenant's
 * users then see only their own tree and cannot reach the parent's.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { useApi, loginAs } from '../helpers/api.js';
import { forEachBackend, type Backend } from '../helpers/backends.js';

function tenantSuite(backend: Backend): void {
  const t = suite(`x-tenant writes (${backend})`);
  const api = useApi(t, backend);

  t('parent creates a subtenant and its first user; the user logs in as name@tenant', async () => {
    assert.is((await api.json('PUT', '/v1/config/system/tenants/acme', { body: { name: 'acme' } })).status, 201);
    const r = await api.json('PATCH', '/v1/config', {
      body: [
        {
          'x-path': '/v1/config/system/users/eve',
          'x-tenant': 'acme',
          'x-operation': 'create',
          password: 'eve-password-1',
          policies: ['admin'],
        },
        { 'x-path': '/v1/config/applications/shop', 'x-tenant': 'acme', version: '1.0' },
      ],
    });
    assert.is(r.status, 204, JSON.stringify(r.body));
    const all = await api.json('GET', '/v1/config?include-tenant-config=true&match-path=/v1/config/applications/*');
    assert.equal(all.body, [
      { 'x-path': '/v1/config/applications/shop', 'x-tenant': 'acme', name: 'shop', version: '1.0' },
    ]);
    const mine = await api.json('GET', '/v1/config/applications');
    assert.equal(mine.body, [], "the parent's own tree is unchanged");

    const login = await loginAs(api, 'eve@acme', 'eve-password-1');
    assert.is(login.status, 200);
    const eve = `Bearer ${(login.body as { token: string }).token}`;
    const seen = await api.json('GET', '/v1/config/applications', { headers: { authorization: eve } });
    assert.equal(seen.body, [{ name: 'shop', version: '1.0' }]);
    const users = await api.json('GET', '/v1/config/system/users?keys', { headers: { authorization: eve } });
    assert.equal(users.body, ['eve']);
  });

  t('a tenant and its first user in one body: the later change sees the tenant made before it', async () => {
    const r = await api.json('PATCH', '/v1/config', {
      body: [
        { 'x-path': '/v1/config/system/tenants/fresh', description: 'made here' },
        {
          'x-path': '/v1/config/system/users/ops',
          'x-tenant': 'fresh',
          password: 'ops-password-1',
          policies: ['admin'],
        },
      ],
    });
    assert.is(r.status, 204, JSON.stringify(r.body));
    const login = await loginAs(api, 'ops@fresh', 'ops-password-1');
    assert.is(login.status, 200, JSON.stringify(login.body));
  });

  t('a subtenant cannot write into its parent or an unknown tenant', async () => {
    const login = await loginAs(api, 'eve@acme', 'eve-password-1');
    const eve = `Bearer ${(login.body as { token: string }).token}`;
    for (const tenant of ['default', 'nosuch']) {
      const r = await api.json('PATCH', '/v1/config', {
        headers: { authorization: eve },
        body: [{ 'x-path': '/v1/config/applications/evil', 'x-tenant': tenant, version: '1' }],
      });
      assert.is(r.status, 404, `${tenant}: ${JSON.stringify(r.body)}`);
    }
    // Naming an existing tenant as made in the same body opens no way into it (names are global).
    const sneak = await api.json('PATCH', '/v1/config', {
      headers: { authorization: eve },
      body: [
        { 'x-path': '/v1/config/system/tenants/default', description: 'mine now?' },
        { 'x-path': '/v1/config/applications/evil', 'x-tenant': 'default', version: '1' },
      ],
    });
    assert.is(sneak.status, 404, JSON.stringify(sneak.body));
    assert.is((await api.json('GET', '/v1/config/applications/evil')).status, 404);
  });

  t('x-tenant must be a name', async () => {
    const r = await api.json('PATCH', '/v1/config', {
      body: [{ 'x-path': '/v1/config/applications/a', 'x-tenant': 7, version: '1' }],
    });
    assert.is(r.status, 400);
    assert.is((r.body as { errors: Array<{ 'error-info': string }> }).errors[0]?.['error-info'], 'bad-x-tenant');
  });

  t(
    'a tenant that holds objects cannot be deleted (409 in-use, nothing changes); with them in one transaction it can, and the name is free again',
    async () => {
      const del = await api.json('DELETE', '/v1/config/system/tenants/acme');
      assert.is(del.status, 409, JSON.stringify(del.body));
      const err = (del.body as { errors: Array<Record<string, string>> }).errors[0]!;
      assert.is(err['error-info'], 'in-use');
      assert.match(err['error-message']!, /tenant acme still holds 2 objects \(\/v1\/config\/applications\/shop, /);
      assert.is((await api.json('GET', '/v1/config/system/tenants/acme')).status, 200, 'still there');

      const gone = await api.json('PATCH', '/v1/config', {
        body: [
          { 'x-path': '/v1/config/applications/shop', 'x-tenant': 'acme', 'x-operation': 'delete' },
          { 'x-path': '/v1/config/system/users/eve', 'x-tenant': 'acme', 'x-operation': 'delete' },
          { 'x-path': '/v1/config/system/tenants/acme', 'x-operation': 'delete' },
        ],
      });
      assert.is(gone.status, 204, JSON.stringify(gone.body));
      const again = await api.json('PUT', '/v1/config/system/tenants/acme', { body: { name: 'acme' } });
      assert.is(again.status, 201, JSON.stringify(again.body));
      const all = await api.json('GET', '/v1/config?include-tenant-config=true&match-path=/v1/config/applications/*');
      assert.equal(all.body, [], 'nothing of the old acme');
    },
  );

  t.run();
}

forEachBackend(tenantSuite);
