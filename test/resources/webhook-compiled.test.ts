/**
 * A webhook is compiled once per written revision: the process that commits it keeps the
 * compiled form under the ETag the commit gave, and the runtime (specOf, as the supervisor
 * calls it) takes that form instead of compiling the configuration again. A revision it does
 * not hold (another ETag) is compiled from the configuration given.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { configKey } from '../../src/store/keys.js';
import { specOf } from '../../src/resources/webhook/compiled.js';
import { startApi, type TestApi } from '../helpers/api.js';

let client: TestApi;

test.before(async () => {
  client = await startApi('embedded');
});
test.after(async () => {
  await client.close();
});

const hook = {
  name: 'w1',
  topics: ['t1'],
  'site-placement': { 'all-sites': true },
  url: 'http://example.test/${MSG_SEQNO}',
  data: '${MSG}',
};

test('the runtime takes the form compiled at write time, by ETag', async () => {
  const tenant = client.settings.tenant;
  const key = configKey(tenant, 'volga/webhooks/w1');
  const created = await client.json('POST', '/v1/config/volga/webhooks', { body: hook });
  assert.is(created.status, 201, JSON.stringify(created.body));
  const etag1 = created.headers.get('etag');
  assert.ok(etag1);
  // `{}` cannot compile (no url): a spec back means the kept form was used.
  const first = specOf(key, etag1, tenant, {}, tenant);
  assert.is(first.name, 'w1');
  assert.equal(first.topics, ['t1']);
  assert.is(specOf(key, etag1, tenant, {}, tenant), first);

  const patched = await client.json('PUT', '/v1/config/volga/webhooks/w1', { body: { ...hook, topics: ['t2'] } });
  assert.ok(patched.status === 200 || patched.status === 204, JSON.stringify(patched.body));
  const etag2 = patched.headers.get('etag');
  assert.ok(etag2 && etag2 !== etag1);
  assert.equal(specOf(key, etag2, tenant, {}, tenant).topics, ['t2']);
  // The old revision is no longer held: it is compiled from what is given.
  assert.throws(() => specOf(key, etag1, tenant, {}, tenant), /url/);
});

test('dry-run and validate compile but keep nothing', async () => {
  const tenant = client.settings.tenant;
  const key = configKey(tenant, 'volga/webhooks/w2');
  for (const mode of ['dry-run', 'validate']) {
    const res = await client.json('POST', `/v1/config/volga/webhooks?${mode}`, { body: { ...hook, name: 'w2' } });
    assert.ok(res.status === 200 || res.status === 204, JSON.stringify(res.body));
  }
  assert.throws(() => specOf(key, '"any"', tenant, {}, tenant), /url/);
});

test.run();
