/**
 * What the projector knows of the sites' logs (src/fleet/control/known-logs.ts): an entry
 * applied in place keeps the index of which sites hold each exporter exact, also when the
 * site was forgotten (a resync) while its append was on its way.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { KnownLogs, type Known } from '../../src/fleet/control/known-logs.js';

const w1 = 'default/volga/webhooks/w1';
const w2 = 'default/volga/webhooks/w2';
const site = 'default/sites/edge-1';

const holders = (known: KnownLogs, key: string) => [...known.holdersOf(key)].sort();

test('applied: puts and deletes update the entry in place and who holds each exporter', () => {
  const known = new KnownLogs();
  const k: Known = { version: '1-0', rev: 1, etags: new Map([[w1, 'a']]) };
  known.set('edge-1', k);
  known.set('edge-2', { version: '1-0', rev: 1, etags: new Map([[w1, 'a']]) });
  assert.equal(holders(known, w1), ['edge-1', 'edge-2']);

  known.applied(
    'edge-1',
    k,
    '2-0',
    2,
    [
      { op: 'put', key: w2 },
      { op: 'delete', key: w1 },
      { op: 'put', key: site },
    ],
    ['b', undefined, 'c'],
  );
  assert.is(known.get('edge-1'), k, 'the same entry');
  assert.equal([k.version, k.rev], ['2-0', 2]);
  assert.equal([...k.etags].sort(), [
    [site, 'c'],
    [w2, 'b'],
  ]);
  assert.equal(holders(known, w1), ['edge-2']);
  assert.equal(holders(known, w2), ['edge-1']);
  assert.equal(holders(known, site), [], 'only exporters are indexed');

  // A new ETag of an object it holds: still held once.
  known.applied('edge-1', k, '3-0', 3, [{ op: 'put', key: w2 }], ['b2']);
  assert.is(k.etags.get(w2), 'b2');
  assert.equal(holders(known, w2), ['edge-1']);
});

test('applied after the site was forgotten: the entry is known again, every exporter it holds indexed', () => {
  const known = new KnownLogs();
  const k: Known = { version: '1-0', rev: 1, etags: new Map([[w1, 'a']]) };
  known.set('edge-1', k);
  known.delete('edge-1'); // a resync, while the append was on its way
  assert.equal(holders(known, w1), []);
  known.applied('edge-1', k, '2-0', 2, [{ op: 'put', key: w2 }], ['b']);
  assert.is(known.get('edge-1'), k);
  assert.equal(holders(known, w1), ['edge-1']);
  assert.equal(holders(known, w2), ['edge-1']);
});

test.run();
