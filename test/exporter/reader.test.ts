/**
 * The topic reader's acks on the embedded bus, wrapped to record XACKs: a handled message
 * is acked in the same turn (no timer); while an XACK is under way the messages handled
 * meanwhile wait and go together in the next one (amortised); each message's `confirmed` is
 * called only once its XACK has answered (the exporter frees the slot then).
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

test('acked in the same turn; handled meanwhile wait for the XACK under way, then go together', async () => {
  const { bus, acks, release } = recordingBus();
  for (let i = 0; i < 4; i++) await bus.produce('t', { payload: `m${i}` });
  const reader = new TopicReader(bus, 't', 'g', 'c', { at: 'beginning' });
  await reader.open();
  const { entries } = await reader.read(10);
  assert.is(entries.length, 4);
  const confirmed: string[] = [];
  const handled = (i: number) => reader.handled(entries[i]!.id, 'delivered', () => confirmed.push(`m${i}`));
  handled(0);
  handled(1);
  await turn();
  assert.equal(acks, [[entries[0]!.id, entries[1]!.id]], 'both acks of one turn in one XACK, before any timer');
  assert.equal(confirmed, [], 'not confirmed before the XACK answers');
  // The first XACK has not answered yet: the next handled messages wait for it.
  handled(2);
  await turn();
  handled(3);
  await turn();
  assert.is(acks.length, 1);
  release();
  await turn();
  await turn();
  assert.equal(confirmed, ['m0', 'm1']);
  assert.equal(acks[1], [entries[2]!.id, entries[3]!.id], 'the two handled meanwhile in one XACK');
  release();
  await reader.flush();
  assert.equal(confirmed, ['m0', 'm1', 'm2', 'm3']);
  assert.equal((await bus.read('t', 'g', 'c', { cursor: '0', count: 10 })).entries, [], 'nothing left pending');
  assert.is((await bus.counts('t', 'g|')).delivered, 4, 'counted with the acks');
});

test('a failed XACK is kept and sent again; confirmed only once it succeeds', async () => {
  const inner = openEmbeddedBus(undefined);
  let fail = 1;
  const bus: Bus = Object.create(inner) as Bus;
  bus.ack = (topic, group, ids, outcomes) =>
    fail-- > 0 ? Promise.reject(new Error('connection lost')) : inner.ack(topic, group, ids, outcomes);
  await bus.produce('t', { payload: 'm0' });
  const reader = new TopicReader(bus, 't', 'g', 'c', { at: 'beginning' });
  await reader.open();
  const { entries } = await reader.read(10);
  let confirmed = 0;
  reader.handled(entries[0]!.id, 'delivered', () => confirmed++);
  await turn();
  await turn();
  assert.is(confirmed, 0, 'the failed ack does not free the slot');
  await reader.flush();
  assert.is(confirmed, 1);
  assert.equal((await bus.read('t', 'g', 'c', { cursor: '0', count: 10 })).entries, [], 'nothing left pending');
});

test('a read whose answer was lost (a failover): the next read returns its entries from the pending list, not those in flight', async () => {
  const inner = openEmbeddedBus(undefined);
  let loseNext = false;
  const bus: Bus = Object.create(inner) as Bus;
  // The read is done (the entries become pending for this consumer), its answer never arrives.
  bus.read = async (...a: Parameters<Bus['read']>) => {
    const r = await inner.read(...a);
    if (!loseNext) return r;
    loseNext = false;
    throw new Error('Socket closed unexpectedly');
  };
  for (let i = 0; i < 5; i++) await bus.produce('t', { payload: `m${i}` });
  const reader = new TopicReader(bus, 't', 'g', 'c', { at: 'beginning' });
  await reader.open();
  const first = await reader.read(2);
  assert.equal(
    first.entries.map((e) => e.fields.payload),
    ['m0', 'm1'],
  );
  // m0 handled and confirmed; m1 still in flight when the next read loses its answer.
  reader.handled(first.entries[0]!.id, 'delivered');
  await reader.flush();
  loseNext = true;
  await reader.read(2).then(
    () => assert.unreachable('the read failed'),
    (err: unknown) => assert.match(String(err), 'Socket closed'),
  );
  const again = await reader.read(10);
  assert.equal(
    again.entries.map((e) => e.fields.payload),
    ['m2', 'm3'],
    "the lost read's entries again, m1 (in flight) not twice",
  );
  const rest = await reader.read(10);
  assert.equal(
    rest.entries.map((e) => e.fields.payload),
    ['m4'],
  );
});

test.run();
