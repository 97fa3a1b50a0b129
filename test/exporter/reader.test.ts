/**
 * The topic reader's acks on the embedded bus, wrapped to record XACKs: a handled message
 * is acked in the same turn (no timer), and an ack never waits for the previous one.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Bus } from '../../src/bus/bus.js';
import { openEmbeddedBus } from '../../src/bus/embedded-bus.js';
import { TopicReader } from '../../src/exporter/topic-reader.js';

const turn = () => new Promise<void>((r) => setImmediate(r));

/** The embedded bus whose acks are recorded and settle only when `release` is called. */
function recordingBus(): { bus: Bus; acks: string[][]; release: () => void } {
  const inner = openEmbeddedBus(undefined);
  const acks: string[][] = [];
  const waiting: Array<() => void> = [];
  const bus: Bus = Object.create(inner) as Bus;
  bus.ack = (topic, group, ids, outcomes) => {
    acks.push([...ids]);
    return new Promise<void>((resolve) => waiting.push(resolve)).then(() => inner.ack(topic, group, ids, outcomes));
  };
  return { bus, acks, release: () => waiting.splice(0).forEach((r) => r()) };
}

test('a handled message is acked in the same turn, without waiting for the XACK before it', async () => {
  const { bus, acks, release } = recordingBus();
  for (let i = 0; i < 3; i++) await bus.produce('t', { payload: `m${i}` });
  const reader = new TopicReader(bus, 't', 'g', 'c', { at: 'beginning' });
  await reader.open();
  const { entries } = await reader.read(10);
  assert.is(entries.length, 3);
  reader.handled(entries[0]!.id, 'delivered');
  reader.handled(entries[1]!.id, 'delivered');
  await turn();
  assert.equal(acks, [[entries[0]!.id, entries[1]!.id]], 'both acks of one turn in one XACK, before any timer');
  // The first XACK has not answered yet; the next handled message is acked anyway.
  reader.handled(entries[2]!.id, 'delivered');
  await turn();
  assert.equal(acks.length, 2);
  assert.equal(acks[1], [entries[2]!.id]);
  release();
  await reader.flush();
  assert.equal((await bus.read('t', 'g', 'c', { cursor: '0', count: 10 })).entries, [], 'nothing left pending');
  assert.is((await bus.counts('t', 'g|')).delivered, 3, 'counted with the acks');
});

test.run();
