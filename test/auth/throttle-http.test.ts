/**
 * Login throttling stays per user and client address, through the real login route: five wrong
 * passwords from one address answer 429 there (Retry-After, `login-throttled`), even with the
 * right password; the right password from another address still logs in, and another user from
 * the throttled address too. (README "Login throttling"; a first-time user read the 429 on their
 * own address as a lock-out.) The address is the TCP peer as the Node server hands it to the
 * app (`incoming.socket.remoteAddress`), set here per request.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { useApi } from '../helpers/api.js';
import { forEachBackend, type Backend } from '../helpers/backends.js';
import { firstProblem } from '../helpers/assert.js';

function run(backend: Backend): void {
  const t = suite(`login throttling over HTTP (${backend})`);
  const api = useApi(t, backend, {
    setup: async (a) => {
      const r = await a.json('POST', '/v1/config/system/users', {
        body: { name: 'bob', password: 'bob-password-1', policies: ['admin'] },
      });
      assert.is(r.status, 201, JSON.stringify(r.body));
    },
  });

  const login = async (username: string, password: string, address: string) => {
    const res = await api.instance.app.fetch(
      new Request('http://edgeplane.test/v1/login', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username, password }),
      }),
      { incoming: { socket: { remoteAddress: address } } },
    );
    const text = await res.text();
    return { status: res.status, headers: res.headers, body: text ? (JSON.parse(text) as unknown) : undefined };
  };

  t('five wrong passwords from one address: 429 there only; another address and another user log in', async () => {
    for (let i = 0; i < 5; i++) assert.is((await login('admin', 'wrong-password', '192.0.2.10')).status, 401);
    const throttled = await login('admin', 'admin-password-1', '192.0.2.10');
    assert.is(throttled.status, 429, 'even the right password, from that address');
    assert.is(firstProblem(throttled.body).code, 'login-throttled');
    assert.ok(Number(throttled.headers.get('retry-after')) > 0, 'Retry-After says when it lifts');
    assert.is((await login('admin', 'admin-password-1', '192.0.2.20')).status, 200, 'another address');
    assert.is((await login('bob', 'bob-password-1', '192.0.2.10')).status, 200, 'another user, same address');
    assert.is((await login('admin', 'admin-password-1', '192.0.2.10')).status, 429, 'still throttled there');
  });

  t('attempts sent together are counted before their passwords are checked: at most five pass', async () => {
    const all = await Promise.all(
      Array.from({ length: 30 }, (_, i) => login('bob', `wrong-password-${i}`, '192.0.2.30')),
    );
    const statuses = all.map((r) => r.status).sort();
    assert.is(statuses.filter((s) => s === 401).length, 5, statuses.join(','));
    assert.is(statuses.filter((s) => s === 429).length, 25);
  });

  t('a success gives its attempt back: logins that succeed never throttle an address', async () => {
    for (let i = 0; i < 25; i++) assert.is((await login('bob', 'bob-password-1', '192.0.2.40')).status, 200);
  });

  t.run();
}

forEachBackend(run);
