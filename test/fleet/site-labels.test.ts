/**
 * The projector's site label index (site-labels.ts) and its index reuse (reindexView): the
 * candidates of an exporter's placement hold every site where it is placed, through label
 * changes, sites created and deleted; a reused index equals one built from scratch.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { JsonObject } from '../../src/lib/json.js';
import { indexView, reindexView, webhookPlacement } from '../../src/fleet/control/applicable.js';
import { createSiteLabelIndex } from '../../src/fleet/control/site-labels.js';

const placements: JsonObject[] = [
  { 'match-site-labels': 'group=g1' },
  { 'match-site-labels': ' region = r2 ' },
  { 'match-site-labels': 'system/name=s3' },
  { 'match-site-labels': 'gpu=yes' },
  { 'match-site-labels': 'region=r1 and group!=g0' },
  { 'match-site-labels': 'group in {g0, g2}' },
  { 'match-site-labels': 'not region=r1' },
  { 'match-site-labels': 'group=' },
  { sites: ['s1', 's4', 'nowhere'] },
  { 'all-sites': true },
  { 'application-deployments': ['d'] },
  {},
];

function site(i: number, group: number): JsonObject {
  return {
    name: `s${i}`,
    type: 'edge',
    labels: { region: `r${i % 3}`, group: `g${group}` },
    ...(i % 4 === 0 ? { hosts: [{ 'host-id': 'h', labels: { gpu: 'yes' } }] } : {}),
  };
}

function sorted(m: Map<string, JsonObject>): Map<string, JsonObject> {
  return new Map([...m].sort(([a], [b]) => (a < b ? -1 : 1)));
}

test('candidates hold every site where an exporter is placed, through changes', () => {
  let view = new Map<string, JsonObject>();
  for (let i = 0; i < 12; i++) view.set(`default/sites/s${i}`, site(i, i % 3));
  placements.forEach((p, k) => view.set(`default/volga/webhooks/x${k}`, { name: `x${k}`, 'site-placement': p }));
  view.set('default/deployments/d', { name: 'd', placement: { 'match-site-labels': 'group=g1' } });
  view = sorted(view);
  const idx = createSiteLabelIndex();
  idx.update(view, view.keys());
  const check = () => {
    const index = indexView(view);
    const names = [...view.keys()].filter((k) => k.startsWith('default/sites/')).map((k) => k.split('/')[2]!);
    assert.equal([...idx.sitesOf('default')].sort(), names.sort());
    placements.forEach((p, k) => {
      const placed = webhookPlacement(view, index, `default/volga/webhooks/x${k}`);
      const c = idx.candidates('default', p);
      if (c === undefined) return;
      for (const s of [...names, 'nowhere', 's99']) if (placed(s)) assert.ok(c.has(s), `x${k} at ${s}`);
    });
  };
  check();
  // Sites move between groups, one is deleted, one created.
  const changed = ['default/sites/s1', 'default/sites/s2', 'default/sites/s5', 'default/sites/s20'];
  view.set('default/sites/s1', site(1, 2));
  view.set('default/sites/s2', site(2, 1));
  view.delete('default/sites/s5');
  view.set('default/sites/s20', site(20, 1));
  view = sorted(view);
  idx.update(view, changed);
  check();
  assert.ok(idx.candidates('default', { 'match-site-labels': 'group=g1' })!.has('s20'));
  assert.not.ok(idx.candidates('default', { 'match-site-labels': 'group=g1' })!.has('s1'));
  assert.not.ok(idx.candidates('default', { 'match-site-labels': 'region=r2' })!.has('s5'));
});

test('reindexView: reused after site or exporter changes, rebuilt after anything else', () => {
  const view = new Map<string, JsonObject>([
    ['default/sites/s1', site(1, 1)],
    ['default/system/users/u', { name: 'u' }],
    ['default/volga/webhooks/a', { name: 'a', 'site-placement': { 'all-sites': true } }],
    ['default/volga/webhooks/b', { name: 'b', 'site-placement': { sites: ['s1'] } }],
  ]);
  const prev = indexView(view);
  const next = new Map(view);
  next.set('default/sites/s1', site(1, 2));
  assert.is(reindexView(prev, next, new Set(['default/sites/s1'])), prev);
  next.set('default/volga/webhooks/b', { name: 'b', 'site-placement': { sites: ['s2'] } });
  const re = reindexView(prev, next, new Set(['default/sites/s1', 'default/volga/webhooks/b']));
  assert.equal(re, indexView(next));
  next.set('default/volga/webhooks/c', { name: 'c', 'site-placement': { sites: ['s2'] } });
  assert.is(reindexView(prev, next, new Set(['default/volga/webhooks/c'])), undefined);
  assert.is(reindexView(prev, view, new Set(['default/system/users/u'])), undefined);
});

test.run();
