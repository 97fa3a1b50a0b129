/**
 * Long lists in a written object: refused past 10,000 entries before any other check, unique
 * entries checked in linear time, and at most 100 problems listed (never a 500: the schema
 * validator's stack overflowed when it gathered tens of thousands of them). Each request is
 * checked for its answer, never its time.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { useApi } from '../helpers/api.js';
import { wireErrors } from '../helpers/assert.js';

const t = suite('big lists (embedded)');
const api = useApi(t, 'embedded');
const HOOK = '/v1/config/volga/webhooks/big';
const hook = { 'site-placement': { 'all-sites': true }, url: 'http://127.0.0.1:9/x', data: 'x' };
const names = (n: number) => Array.from({ length: n }, (_, i) => `t${i.toString(16)}`);

const refused = async (body: object, status: number) => {
  const res = await api.json('PUT', `${HOOK}?validate`, { body: { ...hook, ...body } });
  assert.is(res.status, status, String(JSON.stringify(res.body)).slice(0, 500));
  return res.status === 204 ? [] : wireErrors(res.body);
};

t('a list over 10,000 entries is one 400 schema-maxItems naming it', async () => {
  const errors = await refused({ topics: names(120_000) }, 400);
  assert.is(errors.length, 1);
  assert.is(errors[0]?.['error-info'], 'schema-maxItems');
  assert.is((errors[0]?.['error-details'] as { path?: string }).path, 'topics');
  assert.match(String(errors[0]?.['error-message']), /list of 120000 entries as topics: at most 10000/);
  assert.is((await api.json('GET', HOOK)).status, 404, 'nothing stored');
});

t('an entry twice in a long list: schema-uniqueItems naming the entry', async () => {
  const topics = names(10_000);
  topics[9_999] = topics[17]!;
  const errors = await refused({ topics }, 400);
  assert.equal(
    errors.map((e) => e['error-info']),
    ['schema-uniqueItems'],
  );
  assert.match(String(errors[0]?.['error-message']), /topics with "t11" twice/);
  assert.is((await refused({ topics: names(10_000) }, 204)).length, 0, 'all distinct: valid');
});

t('thousands of bad entries: a 400 listing the first 100 problems, not a 500', async () => {
  const errors = await refused({ topics: ['a'], 'retry-on': names(10_000).map((n) => `${n}!`) }, 400);
  assert.is(errors.length, 100);
  assert.ok(errors.every((e) => e['error-info'] === 'schema-invalid' || String(e['error-info']).startsWith('schema-')));
});

t.run();
