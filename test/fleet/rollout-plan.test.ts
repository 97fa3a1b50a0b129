/**
 * Staged rollouts, the pure parts (fleet/control/rollout-plan.ts): which sites each wave takes
 * and the gate between waves; and at the API (one process, embedded store): the `rollout`
 * member's 400s naming the field, the rollout operations' 404 and 409, and the state's
 * `rollout` progress of an object that reaches no site.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { gate, planWaves, type WaveSite } from '../../src/fleet/control/rollout-plan.js';
import { parseRollout, type RolloutSpec } from '../../src/resources/rollout.js';
import { startApi, type TestApi } from '../helpers/api.js';
import { eventually } from '../helpers/wait.js';

const spec = (waves: RolloutSpec['waves'], more: Partial<RolloutSpec> = {}): RolloutSpec => ({
  waves,
  waitMs: 0,
  healthyForMs: 1000,
  onFailure: 'pause',
  ...more,
});
const sites = (n: number, labels: (i: number) => Record<string, string> = () => ({})) =>
  Array.from({ length: n }, (_, i) => ({ name: `s-${String(i).padStart(2, '0')}`, labels: labels(i) }));

test('planWaves: percentages are cumulative over the sites in name order', () => {
  const all = sites(10).reverse();
  assert.equal(planWaves(spec([{ percent: 10 }, { percent: 50 }, { percent: 100 }]), all), [
    ['s-00'],
    ['s-01', 's-02', 's-03', 's-04'],
    ['s-05', 's-06', 's-07', 's-08', 's-09'],
  ]);
  // ceil: 25% of 3 sites is one site; sites no wave took form a last wave.
  assert.equal(planWaves(spec([{ percent: 25 }]), sites(3)), [['s-00'], ['s-01', 's-02']]);
});

test('planWaves: a label wave takes what it matches and no earlier wave took; empty waves are dropped', () => {
  const all = sites(5, (i) => ({ ring: i === 3 ? 'canary' : 'main' }));
  assert.equal(planWaves(spec([{ labels: 'ring = canary' }, { labels: 'ring = nothing' }, { percent: 40 }]), all), [
    ['s-03'],
    ['s-00', 's-01'],
    ['s-02', 's-04'],
  ]);
  assert.equal(planWaves(spec([{ percent: 50 }]), []), []);
});

const site = (name: string, applied: boolean, at?: number, statuses: string[] = ['ready']): WaveSite => ({
  site: name,
  applied,
  ...(at !== undefined ? { report: { at, statuses: statuses.map((status) => ({ name: 'h', status })) } } : {}),
});

test('gate: waits for every site to apply, then to report ready after the wave started', () => {
  const s = spec([{ percent: 100 }]);
  const w1 = gate({ spec: s, now: 100, waveStarted: 50, sites: [site('a', true, 60), site('b', false)] });
  assert.equal(w1, { kind: 'wait', reason: 'waiting for b to apply the change', applied: 1 });
  // A report from before the wave started shows the previous content: not counted.
  const w2 = gate({ spec: s, now: 100, waveStarted: 50, sites: [site('a', true, 60), site('b', true, 40)] });
  assert.equal(w2, { kind: 'wait', reason: 'waiting for b to report ready', applied: 2 });
  const starting = gate({ spec: s, now: 100, waveStarted: 50, sites: [site('a', true, 60, ['starting'])] });
  assert.is(starting.kind, 'wait');
});

test('gate: healthy-for without a break, and wait, before the next wave', () => {
  const s = spec([{ percent: 100 }], { healthyForMs: 1000, waitMs: 5000 });
  const sites = [site('a', true, 60), site('b', true, 70, ['ready', 'paused', 'stopped'])];
  const first = gate({ spec: s, now: 100, waveStarted: 50, sites });
  assert.equal(first, {
    kind: 'wait',
    healthySince: 100,
    reason: 'healthy; waiting for healthy-for and wait to pass',
    applied: 2,
  });
  // healthy-for passed, wait not yet.
  assert.is(gate({ spec: s, now: 1200, waveStarted: 50, healthySince: 100, sites }).kind, 'wait');
  assert.equal(gate({ spec: s, now: 5100, waveStarted: 50, healthySince: 100, sites }), { kind: 'advance' });
});

test('gate: a site reporting error or retrying since the wave started fails the wave', () => {
  const s = spec([{ percent: 100 }]);
  const fail = gate({
    spec: s,
    now: 100,
    waveStarted: 50,
    sites: [
      site('a', true, 60),
      {
        site: 'b',
        applied: true,
        report: { at: 70, statuses: [{ name: 'h', status: 'retrying', error: 'HTTP 500' }] },
      },
    ],
  });
  assert.equal(fail, { kind: 'fail', site: 'b', reason: 'site b reports exporter h retrying: HTTP 500' });
  // The same report from before the wave started does not count (it is the previous content's).
  assert.is(gate({ spec: s, now: 100, waveStarted: 80, sites: [site('b', true, 70, ['error'])] }).kind, 'wait');
});

test('parseRollout: defaults and the on-failure choice', () => {
  assert.equal(
    parseRollout({ rollout: { waves: [{ percent: 50 }] } }),
    spec([{ percent: 50 }], { healthyForMs: 30_000 }),
  );
  assert.equal(
    parseRollout({
      rollout: { waves: [{ 'match-site-labels': 'a = b' }], wait: '2m', 'healthy-for': '1s', 'on-failure': 'rollback' },
    }),
    { waves: [{ labels: 'a = b' }], waitMs: 120_000, healthyForMs: 1000, onFailure: 'rollback' },
  );
  assert.is(parseRollout({ name: 'x' }), undefined);
});

let api: TestApi;
const hook = (rollout: unknown) => ({
  name: 'h',
  url: 'http://127.0.0.1:9/x',
  topic: 't',
  data: '${MSG_PAYLOAD}',
  'site-placement': { 'all-sites': true },
  rollout,
});
type ErrorBody = {
  errors: Array<{ 'error-message': string; 'error-info': string; 'error-details': { path?: string } }>;
};

test('API: a bad rollout is a 400 naming the field, and changes nothing', async () => {
  api = await startApi('embedded');
  const cases: Array<[unknown, string, string]> = [
    [{ waves: [] }, 'rollout/waves', 'schema-minItems'],
    [{ waves: [{ percent: 0 }] }, 'rollout/waves[0]/percent', 'schema-minimum'],
    [{ waves: [{ percent: 50, 'match-site-labels': 'a = b' }] }, 'rollout/waves[0]', 'schema-maxProperties'],
    [{ waves: [{ percent: 50 }], wait: 'soon' }, 'rollout/wait', 'schema-pattern'],
    [{ waves: [{ percent: 50 }], 'on-failure': 'panic' }, 'rollout/on-failure', 'schema-enum'],
    [{ waves: [{ percent: 60 }, { percent: 40 }] }, 'rollout/waves[1]/percent', 'rollout-percent'],
    [{ waves: [{ 'match-site-labels': 'ring = (' }] }, 'rollout/waves[0]/match-site-labels', ''],
    [{ percent: 50 }, 'rollout', 'schema-required'],
  ];
  for (const [rollout, path, info] of cases) {
    const r = await api.json('PUT', '/v1/config/volga/webhooks/h', { body: hook(rollout) });
    assert.is(r.status, 400, JSON.stringify(r.body));
    const errors = (r.body as ErrorBody).errors;
    assert.ok(
      errors.some((e) => (e['error-details'].path ?? '').startsWith(path) && (!info || e['error-info'] === info)),
      `${JSON.stringify(rollout)}: ${JSON.stringify(errors)}`,
    );
  }
  assert.is((await api.json('GET', '/v1/config/volga/webhooks/h')).status, 404, 'nothing was written');
});

test('API: the waves keep the order written, through a PUT and a plain PATCH of another field', async () => {
  const waves = [{ percent: 75 }, { 'match-site-labels': 'b = c' }, { percent: 100 }, { 'match-site-labels': 'a = b' }];
  const waves2 = [{ percent: 90 }, { percent: 95 }];
  assert.is(
    (await api.json('PUT', '/v1/config/volga/webhooks/o', { body: { ...hook({ waves }), name: 'o' } })).status,
    201,
  );
  assert.is(
    (await api.json('PATCH', '/v1/config/volga/webhooks/o', { body: { url: 'http://127.0.0.1:9/y' } })).status,
    204,
  );
  const read = (await api.json('GET', '/v1/config/volga/webhooks/o')).body as { rollout: { waves: unknown } };
  assert.equal(read.rollout.waves, waves);
  // A plain patch replaces the list as a whole, as with any ordered list.
  const patched = await api.json('PATCH', '/v1/config/volga/webhooks/o', { body: { rollout: { waves: waves2 } } });
  assert.is(patched.status, 204);
  const again = (await api.json('GET', '/v1/config/volga/webhooks/o')).body as { rollout: { waves: unknown } };
  assert.equal(again.rollout.waves, waves2);
  assert.is((await api.json('DELETE', '/v1/config/volga/webhooks/o')).status, 204);
});

test('API: rollout operations: 404 without the object, 409 without a rollout to act on', async () => {
  const abort = await api.json('POST', '/v1/state/volga/webhooks/h/rollout/abort');
  assert.is(abort.status, 404);
  const plain = hook(undefined);
  delete (plain as Record<string, unknown>).rollout;
  assert.is((await api.json('PUT', '/v1/config/volga/webhooks/h', { body: plain })).status, 201);
  const none = await api.json('POST', '/v1/state/volga/webhooks/h/rollout/resume');
  assert.is(none.status, 409);
  assert.is((none.body as ErrorBody).errors[0]!['error-info'], 'rollout-state');
  // A site that never connects: wave 1 waits for it, and abort rolls back.
  assert.is((await api.json('PUT', '/v1/config/sites/edge-a', { body: { name: 'edge-a' } })).status, 201);
  const r = await api.json('PUT', '/v1/config/volga/webhooks/h', { body: hook({ waves: [{ percent: 50 }] }) });
  assert.is(r.status, 204, JSON.stringify(r.body));
  let state: { rollout?: Record<string, unknown> } = {};
  const rollout = async () => {
    state = (await api.json('GET', '/v1/state/volga/webhooks/h')).body as typeof state;
    return state.rollout;
  };
  await eventually(
    async () => (await rollout())?.reason === 'waiting for edge-a to apply the change',
    () => `wave 1 waits for edge-a: ${JSON.stringify(state)}`,
  );
  assert.equal(state.rollout, {
    waves: [{ percent: 50 }],
    revision: state.rollout?.revision,
    wave: 1,
    state: 'progressing',
    'sites-updated': 0,
    'sites-total': 1,
    reason: 'waiting for edge-a to apply the change',
  });
  assert.is(typeof state.rollout?.revision, 'number');
  assert.is((await api.json('POST', '/v1/state/volga/webhooks/h/rollout/resume')).status, 409, 'not paused');
  assert.is((await api.json('POST', '/v1/state/volga/webhooks/h/rollout/abort')).status, 204);
  assert.equal((await rollout())?.state, 'rolled-back');
  assert.equal(state.rollout?.reason, 'aborted by admin');
  const again = await api.json('POST', '/v1/state/volga/webhooks/h/rollout/abort');
  assert.is(again.status, 409);
  assert.is((await api.json('OPTIONS', '/v1/state/volga/webhooks/h/rollout/abort')).status, 204);
  await api.close();
});

test.run();
