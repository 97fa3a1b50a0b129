/**
 * Choices made where the specification is silent: a singleton can be patched before it was ever
 * written; x-json-patch may be given as JSON or YAML text; login and refresh refuse dry-run.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { useApi } from '../helpers/api.js';
import { forEachBackend, type Backend } from '../helpers/backends.js';
import { wireErrors } from '../helpers/assert.js';

const code = (body: unknown) => wireErrors(body)[0]?.['error-info'];

function extras(backend: Backend): void {
  const t = suite(`API extras (${backend})`);
  const api = useApi(t, backend);

  t('PATCH of system/settings before any write creates it', async () => {
    const r = await api.json('PATCH', '/v1/config/system/settings', { body: { 'default-domain': 'lab.example.com' } });
    assert.is(r.status, 204);
    assert.equal((await api.json('GET', '/v1/config/system/settings')).body, { 'default-domain': 'lab.example.com' });
  });

  t('PATCH of a missing list entry is still 404', async () => {
    const r = await api.json('PATCH', '/v1/config/applications/nope', { body: { version: '2' } });
    assert.is(r.status, 404);
  });

  t('x-json-patch as JSON text and as YAML text', async () => {
    assert.is((await api.json('PUT', '/v1/config/applications/shop', { body: { version: '1' } })).status, 201);
    const r = await api.json('PATCH', '/v1/config', {
      body: [
        {
          'x-path': '/v1/config/applications/shop',
          'x-operation': 'update',
          'x-json-patch': '[{"op":"replace","path":"/version","value":"2"}]',
        },
        {
          'x-path': '/v1/config/applications/shop',
          'x-operation': 'update',
          'x-json-patch': '- op: add\n  path: /description\n  value: the shop\n',
        },
      ],
    });
    assert.is(r.status, 204, JSON.stringify(r.body));
    assert.equal((await api.json('GET', '/v1/config/applications/shop')).body, {
      name: 'shop',
      version: '2',
      description: 'the shop',
    });
    const bad = await api.json('PATCH', '/v1/config', {
      body: [{ 'x-path': '/v1/config/applications/shop', 'x-operation': 'update', 'x-json-patch': '[{"op":' }],
    });
    assert.is(bad.status, 400);
    assert.is(code(bad.body), 'bad-x-json-patch');
  });

  t('login and token refresh refuse dry-run and other parameters', async () => {
    const login = await api.json('POST', '/v1/login?dry-run', {
      body: { username: 'admin', password: 'admin-password-1' },
      headers: { authorization: '' },
    });
    assert.is(login.status, 400);
    assert.is(code(login.body), 'no-dry-run');
    const refresh = await api.json('POST', '/v1/state/strongbox/token/refresh?x=1');
    assert.is(refresh.status, 400);
    assert.is(code(refresh.body), 'unknown-parameter');
    assert.match(JSON.stringify(refresh.body), /takes no query parameter/);
  });

  t('an error never grows with the input: a huge key or x-path is quoted cut, with its length', async () => {
    const key = 'k'.repeat(100_000);
    const bigKey = await api.req('PUT', '/v1/config/applications/a1', {
      raw: JSON.stringify({ name: 'a1', [key]: 1 }),
    });
    const text = await bigKey.text();
    assert.is(bigKey.status, 400);
    assert.ok(text.length < 6000, `a ${text.length}-character reply`);
    assert.match(text, /\(100000 characters\)/);
    const path = `/v1/config/applications/${'x'.repeat(200_000)}`;
    const bigPath = await api.req('PATCH', '/v1/config', { body: [{ 'x-path': path, name: 'x', version: '1' }] });
    const t2 = await bigPath.text();
    assert.is(bigPath.status, 400);
    assert.ok(t2.length < 6000, `a ${t2.length}-character reply`);
  });

  t('dry-run or validate on any operation gives one code: no-dry-run', async () => {
    const operations = [
      '/v1/login',
      '/v1/state/strongbox/token/refresh',
      '/v1/strongbox/unseal',
      '/v1/state/volga/webhooks/w/restart',
      '/v1/state/volga/webhooks/w/rewind',
      '/v1/state/volga/topics/t/produce',
    ];
    for (const path of operations) {
      for (const name of ['dry-run', 'validate']) {
        const res = await api.json('POST', `${path}?${name}`, { body: { key: 'k' } });
        assert.is(res.status, 400, `${path}?${name}`);
        assert.is(code(res.body), 'no-dry-run', `${path}?${name}`);
      }
    }
  });

  t.run();
}

forEachBackend(extras);
