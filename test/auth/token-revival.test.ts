/**
 * A token dies with its user or its password for good: a rollback that restores the user as it
 * was (same password hash) does not bring its old tokens back.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { useApi } from '../helpers/api.js';
import { forEachBackend, type Backend } from '../helpers/backends.js';
import { eventually } from '../helpers/wait.js';

function run(backend: Backend): void {
  const t = suite(`revoked tokens stay revoked (${backend})`);
  const api = useApi(t, backend);

  const login = async (username: string, password: string): Promise<string> => {
    const res = await api.json('POST', '/v1/login', { body: { username, password } });
    assert.is(res.status, 200, JSON.stringify(res.body));
    return (res.body as { token: string }).token;
  };
  const statusWith = async (token: string) =>
    (await api.json('GET', '/v1/config/sites', { headers: { authorization: `Bearer ${token}` } })).status;
  const latest = async (): Promise<number> => {
    const res = await api.json('GET', '/v1/state/config-revisions?fields=revision');
    return Math.max(...(res.body as Array<{ revision: number }>).map((r) => r.revision));
  };
  const rollback = async (to: number) => {
    const res = await api.json('POST', '/v1/config/rollback', { body: { to } });
    assert.is(res.status, 200, JSON.stringify(res.body));
  };

  t('a user deleted, then restored by a rollback: its old token stays refused', async () => {
    const user = { password: 'zed-password-1', policies: ['admin'] };
    assert.is((await api.json('PUT', '/v1/config/system/users/zed', { body: user })).status, 201);
    const token = await login('zed', 'zed-password-1');
    assert.is(await statusWith(token), 200);
    const rev = await latest();
    assert.is((await api.json('DELETE', '/v1/config/system/users/zed')).status, 204);
    assert.is(await statusWith(token), 401);
    await rollback(rev);
    assert.is(await statusWith(await login('zed', 'zed-password-1')), 200, 'the user is back');
    // Revocation runs on the change notification: give it its moment, then check it held.
    await eventually(async () => (await statusWith(token)) === 401 || undefined, 'the old token refused');
    assert.is(await statusWith(token), 401);
  });

  t('a token not used meanwhile is deleted too, when its user is', async () => {
    const user = { password: 'kim-password-1', policies: ['admin'] };
    assert.is((await api.json('PUT', '/v1/config/system/users/kim', { body: user })).status, 201);
    const token = await login('kim', 'kim-password-1');
    const rev = await latest();
    const store = api.instance.deps.store;
    const kims = async () =>
      (await Promise.all((await store.kvKeys('token:')).map((k) => store.kvGet(k)))).filter((v) =>
        v?.includes('"user":"kim"'),
      ).length;
    assert.is(await kims(), 1);
    assert.is((await api.json('DELETE', '/v1/config/system/users/kim')).status, 204);
    await eventually(async () => (await kims()) === 0 || undefined, "kim's token deleted");
    await rollback(rev);
    assert.is(await statusWith(token), 401);
  });

  t('a password changed, then undone by a rollback: tokens of the old password stay refused', async () => {
    const user = { password: 'amy-password-1', policies: ['admin'] };
    assert.is((await api.json('PUT', '/v1/config/system/users/amy', { body: user })).status, 201);
    const token = await login('amy', 'amy-password-1');
    const rev = await latest();
    const changed = await api.json('PATCH', '/v1/config/system/users/amy', { body: { password: 'amy-password-2' } });
    assert.is(changed.status, 204);
    assert.is(await statusWith(token), 401);
    await rollback(rev);
    assert.is(await statusWith(await login('amy', 'amy-password-1')), 200, 'the old password is back');
    assert.is(await statusWith(token), 401);
  });

  t.run();
}

forEachBackend(run);
