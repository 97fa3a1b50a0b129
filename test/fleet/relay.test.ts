/**
 * The `site=` reverse channel (src/fleet/control/relay.ts), in process and on the test Redis: a read
 * asked on one relay reaches the stream listener of its site on another (two control-plane
 * processes = two relays on one Redis; and on a Redis Cluster: sharded pub/sub), the answer given on a third reaches the asker; no
 * listener or no answer → undefined after the wait; an answer naming another site is dropped.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  createEmbeddedRelay,
  openRedisRelay,
  type FleetRelay,
  type ForwardedRead,
} from '../../src/fleet/control/relay.js';
import { freshRedisDb } from '../helpers/redis.js';
import { freshTarget } from '../helpers/backends.js';

type Trio = { asker: FleetRelay; holder: FleetRelay; receiver: FleetRelay; close(): Promise<void> };

const backends: Array<[string, () => Promise<Trio>]> = [
  [
    'memory',
    async () => {
      const r = createEmbeddedRelay();
      return { asker: r, holder: r, receiver: r, close: () => r.close() };
    },
  ],
  ...(['redis', 'cluster'] as const).map((deployment): [string, () => Promise<Trio>] => [
    deployment,
    async () => {
      const url = deployment === 'redis' ? await freshRedisDb(7) : await freshTarget('cluster');
      const [asker, holder, receiver] = await Promise.all([
        openRedisRelay(url),
        openRedisRelay(url),
        openRedisRelay(url),
      ]);
      return {
        asker,
        holder,
        receiver,
        close: async () => {
          for (const r of [asker, holder, receiver]) await r.close();
        },
      };
    },
  ]),
];

for (const [name, open] of backends) {
  test(`${name}: a read reaches the holder of the site's stream; the answer reaches the asker`, async () => {
    const t = await open();
    try {
      const seen: ForwardedRead[] = [];
      const stop = t.holder.onRead('edge-1', (read) => {
        seen.push(read);
        void t.receiver.answer('edge-1', read.id, { status: 200, body: { name: 'w', status: 'ready' } });
      });
      const other: ForwardedRead[] = [];
      const stopOther = t.holder.onRead('edge-2', (read) => other.push(read));
      const answer = await t.asker.ask(
        'edge-1',
        { tenant: 'default', path: '/v1/state/x', query: 'fields=name' },
        5000,
      );
      assert.equal(answer, { status: 200, body: { name: 'w', status: 'ready' } });
      assert.is(seen.length, 1);
      assert.equal(
        { ...seen[0], id: 'id' },
        { id: 'id', tenant: 'default', path: '/v1/state/x', query: 'fields=name' },
      );
      assert.is(other.length, 0, "another site's stream does not see it");
      stop();
      stopOther();
    } finally {
      await t.close();
    }
  });

  test(`${name}: no stream, or an answer from another site → undefined after the wait`, async () => {
    const t = await open();
    try {
      assert.is(await t.asker.ask('edge-1', { tenant: 'default', path: '/v1/state', query: '' }, 200), undefined);
      let reads = 0;
      const stop = t.holder.onRead('edge-1', (read) => {
        reads++;
        void t.receiver.answer('edge-2', read.id, { status: 200, body: 'forged' });
      });
      assert.is(await t.asker.ask('edge-1', { tenant: 'default', path: '/v1/state', query: '' }, 300), undefined);
      assert.is(reads, 1, 'the read came, the forged answer was dropped');
      stop();
      // A listener that stopped no longer receives reads.
      assert.is(await t.asker.ask('edge-1', { tenant: 'default', path: '/v1/state', query: '' }, 300), undefined);
      assert.is(reads, 1);
    } finally {
      await t.close();
    }
  });
}

test.run();
