/**
 * lib/bearer.ts, the one reading of `Authorization: Bearer <token>`: the scheme in any case
 * (RFC 9110 §11.1), and through the real app the same header works for a user token, a site
 * token and METRICS_TOKEN alike (before, `bearer x` worked for users only).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { bearerToken } from '../../src/lib/bearer.js';
import { loadSettings, SettingsError } from '../../src/lib/settings.js';
import { startApi } from '../helpers/api.js';

const cases: Array<[string | undefined, string | undefined]> = [
  ['Bearer abc', 'abc'],
  ['bearer abc', 'abc'],
  ['BEARER abc', 'abc'],
  ['bEaReR   abc', 'abc'],
  ['  Bearer abc  ', 'abc'],
  ['Bearer a-b.c_d~e+f/g==', 'a-b.c_d~e+f/g=='],
  ['Bearer', undefined],
  ['Bearer ', undefined],
  ['Bearer a b', undefined],
  ['Bearerabc', undefined],
  ['Bearer\tabc', undefined],
  ['Basic abc', undefined],
  ['', undefined],
  [undefined, undefined],
];
for (const [header, token] of cases)
  test(`bearerToken(${JSON.stringify(header)}) is ${JSON.stringify(token)}`, () => {
    assert.is(bearerToken(header), token);
  });

test('METRICS_TOKEN with whitespace is refused at start-up (it could never be sent), naming the setting only', () => {
  try {
    loadSettings({ METRICS_TOKEN: 'two words' });
    assert.unreachable('loaded');
  } catch (err) {
    assert.instance(err, SettingsError);
    assert.is((err as SettingsError).setting, 'METRICS_TOKEN');
    assert.not.match((err as Error).message, 'two words');
  }
});

test('a lower-case or upper-case scheme works for a user, a site and /metrics alike', async () => {
  const api = await startApi('embedded', { env: { METRICS_TOKEN: 'scrape-secret-1' } });
  try {
    assert.is((await api.json('PUT', '/v1/config/sites/site-a', { body: { name: 'site-a' } })).status, 201);
    const issued = await api.json('POST', '/v1/state/sites/site-a/issue-token');
    assert.is(issued.status, 201);
    const siteToken = (issued.body as { token: string }).token;
    for (const scheme of ['bearer', 'BEARER', 'Bearer']) {
      const user = await api.req('GET', '/v1/config/sites', { headers: { authorization: `${scheme} ${api.token}` } });
      assert.is(user.status, 200, `user, ${scheme}`);
      await user.body?.cancel();
      const metrics = await api.req('GET', '/metrics', { headers: { authorization: `${scheme} scrape-secret-1` } });
      assert.is(metrics.status, 200, `metrics, ${scheme}`);
      await metrics.body?.cancel();
      const ack = await api.req('POST', '/v1/fleet/sites/site-a/ack?version=1-0', {
        headers: { authorization: `${scheme} ${siteToken}` },
      });
      assert.is(ack.status, 204, `site, ${scheme}`);
      await ack.body?.cancel();
    }
    // Another scheme is no way in anywhere.
    for (const [path, method, token] of [
      ['/v1/config/sites', 'GET', api.token],
      ['/metrics', 'GET', 'scrape-secret-1'],
      ['/v1/fleet/sites/site-a/ack?version=1-0', 'POST', siteToken],
    ] as const) {
      const r = await api.req(method, path, { headers: { authorization: `Token ${token}` } });
      assert.is(r.status, 401, path);
      await r.body?.cancel();
    }
  } finally {
    await api.close();
  }
});

test.run();
