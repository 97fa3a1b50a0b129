/**
 * Never a 500 on deep nesting (CONTRACT §5): everything a client can nest has a documented limit
 * (README "Nesting limits"), answered 400 `too-deep` with the position beyond it, and accepted
 * at the limit. Before the limits, `where` with `not(` ×1000 or `(` ×1500 and a label
 * expression nested ×4000 overflowed the stack (500), and YAML nested 900 deep answered 400
 * "Maximum call stack size exceeded".
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { useApi } from '../helpers/api.js';
import { firstProblem } from '../helpers/assert.js';

const t = suite('nesting limits');
const api = useApi(t, 'embedded', {
  setup: async (a) => {
    const r = await a.json('POST', '/v1/config/sites', { body: { name: 's1', type: 'edge', labels: { a: 'b' } } });
    assert.is(r.status, 201, JSON.stringify(r.body));
  },
});

const enc = encodeURIComponent;
const nest = (open: string, inner: string, close: string, n: number) => open.repeat(n) + inner + close.repeat(n);
const hook = (name: string, labels: string) => ({
  name,
  topics: ['t'],
  url: 'http://127.0.0.1:1/',
  data: 'x',
  'site-placement': { 'match-site-labels': labels },
});

async function tooDeep(res: Promise<{ status: number; body: unknown }>, where: Record<string, unknown>) {
  const r = await res;
  assert.is(r.status, 400, JSON.stringify(r.body).slice(0, 300));
  const p = firstProblem(r.body);
  assert.is(p.code, 'too-deep', JSON.stringify(r.body).slice(0, 300));
  for (const [k, v] of Object.entries(where)) assert.equal(p[k], v, `${k}: ${JSON.stringify(p)}`);
}

const where = (expr: string) => api.json('GET', `/v1/config/sites?where=${enc(expr)}`);

t('where: not( ×1000, ( ×1500, [ ×1500, unary minus ×5000 → 400 at the level beyond 128', async () => {
  await tooDeep(where(nest('not(', 'name', ')', 1000)), { parameter: 'where', position: 128 * 4, limit: 128 });
  await tooDeep(where(nest('(', 'name', ')', 1500)), { parameter: 'where', position: 128 });
  await tooDeep(where('name' + '[name'.repeat(1500) + ']'.repeat(1500)), { parameter: 'where', position: 128 * 5 + 4 });
  await tooDeep(where('-'.repeat(5000) + '1 = 1'), { parameter: 'where', position: 128 });
});

t('where: a chain of 1,500 operators → 400 (its tree is as deep); 128 levels are accepted', async () => {
  await tooDeep(where(Array(1500).fill('name').join(' or ')), { parameter: 'where' });
  for (const expr of [
    nest('(', 'name', ')', 128),
    Array(128).fill('name').join(' or '),
    nest('not(', 'name', ')', 127),
  ]) {
    const r = await where(expr);
    assert.is(r.status, 200, JSON.stringify(r.body).slice(0, 300));
  }
  await tooDeep(where(Array(129).fill('name').join(' or ')), { parameter: 'where' });
});

t('labels: match-site-labels and a deployment placement nested ×4000 → 400 at position 64', async () => {
  await tooDeep(api.json('POST', '/v1/config/volga/webhooks', { body: hook('w1', nest('(', 'a = b', ')', 4000)) }), {
    position: 64,
    path: 'site-placement/match-site-labels',
  });
  await tooDeep(api.json('POST', '/v1/config/volga/webhooks', { body: hook('w1', 'not '.repeat(4000) + 'a') }), {
    position: 64 * 4,
  });
  const deployment = {
    name: 'd1',
    'application-name': 'a',
    'application-version': '1',
    placement: { 'match-site-labels': nest('(', 'a = b', ')', 4000) },
  };
  await tooDeep(api.json('POST', '/v1/config/application-deployments', { body: deployment }), {
    position: 64,
    path: 'placement/match-site-labels',
  });
  await tooDeep(where(`match-labels(labels, "${nest('(', 'a', ')', 4000)}")`), { parameter: 'where' });
  const ok = await api.json('POST', '/v1/config/volga/webhooks', { body: hook('w64', nest('(', 'a = b', ')', 64)) });
  assert.is(ok.status, 201, JSON.stringify(ok.body));
});

t('YAML: flow ×900 and ×100,000, block ×900 → 400 too-deep with line and column; 64 levels accepted', async () => {
  const post = (raw: string) => api.json('POST', '/v1/config/applications', { raw, type: 'application/yaml' });
  await tooDeep(post(`name: a\nversion: "1"\nx: ${nest('[', '', ']', 900)}\n`), { line: 3, column: 67 });
  await tooDeep(post(`x: ${nest('[', '', ']', 100_000)}\n`), { line: 1, column: 67 });
  let block = '';
  for (let i = 0; i < 900; i++) block += `${' '.repeat(i)}k:\n`;
  await tooDeep(post(block), { line: 65, column: 65 });
  // 64 levels parse: the schema then names the unknown field (not a nesting error).
  const at64 = await post(`name: a\nversion: "1"\nx: ${nest('[', '', ']', 63)}\n`);
  assert.is(at64.status, 400);
  assert.is(firstProblem(at64.body).code, 'unknown-field', JSON.stringify(at64.body));
});

t('JSON: nested ×100,000 → 400 too-deep at the 65th level', async () => {
  const raw = `{"x":${nest('[', '', ']', 100_000)}}`;
  await tooDeep(api.json('POST', '/v1/config/applications', { raw }), { line: 1, column: 69 });
});

t('fields: a field nested ×3000 → 400 at the step beyond 128', async () => {
  const r = api.json('GET', `/v1/config?fields=${enc(nest('a/[', 'b', ']', 3000))}`);
  await tooDeep(r, { parameter: 'fields', position: 128 * 3, limit: 128 });
});

t.run();
