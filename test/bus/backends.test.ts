/**
 * One suite for both bus backends (Redis streams and the embedded bus): produce and topic
 * info, group start positions, pending redelivery and ack, lag, watch and discovery, group
 * destruction. Then what is specific: the embedded bus survives a reopen; the Redis bus
 * uses two connections whatever the number of watched topics.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { appendFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createClient } from 'redis';
import { BusError, idMs, type Bus, type CountedOutcome } from '../../src/bus/bus.js';
import { openEmbeddedBus } from '../../src/bus/embedded-bus.js';
import { openRedisBus } from '../../src/bus/redis-bus.js';
import { rejects } from '../helpers/assert.js';
import { forEachDeployment, openTestBus, tempDir } from '../helpers/backends.js';
import { freshRedisDb } from '../helpers/redis.js';
import { eventually } from '../helpers/wait.js';

forEachDeployment((backend) => {
  const t = (label: string, fn: (bus: Bus) => Promise<void>) =>
    test(`${backend}: ${label}`, async () => {
      const bus = await openTestBus(backend);
      try {
        await fn(bus);
      } finally {
        await bus.close();
      }
    });

  t('produce returns increasing ids; topicInfo and listTopics see the topic', async (bus) => {
    const a = await bus.produce(`${backend}-info`, { payload: '1' });
    const c = await bus.produce(`${backend}-info`, { payload: '2', 'producer-name': 'p', host: 'h' });
    assert.ok(/^\d+-\d+$/.test(a) && a !== c);
    const info = await bus.topicInfo(`${backend}-info`);
    assert.is(info?.length, 2);
    assert.is(info?.['last-entry-id'], c);
    assert.equal(info?.['last-entry'], { id: c, payload: '2', 'producer-name': 'p', host: 'h' });
    assert.ok((await bus.listTopics()).includes(`${backend}-info`));
    assert.is(await bus.topicInfo(`${backend}-missing`), undefined);
  });

  t('group at end skips old entries, at beginning reads them; an existing group keeps its position', async (bus) => {
    const topic = `${backend}-pos`;
    await bus.produce(topic, { payload: 'old' });
    await bus.ensureGroup(topic, 'g-end', { at: 'end' });
    await bus.ensureGroup(topic, 'g-beg', { at: 'beginning' });
    await bus.produce(topic, { payload: 'new' });
    const end = await bus.read(topic, 'g-end', 'c', { cursor: '>', count: 10 });
    const beg = await bus.read(topic, 'g-beg', 'c', { cursor: '>', count: 10 });
    assert.equal(
      end.entries.map((e) => e.fields.payload),
      ['new'],
    );
    assert.equal(
      beg.entries.map((e) => e.fields.payload),
      ['old', 'new'],
    );
    assert.is(end.lag, 0);
    await bus.ensureGroup(topic, 'g-end', { at: 'beginning' });
    assert.equal((await bus.read(topic, 'g-end', 'c', { cursor: '>', count: 10 })).entries, []);
  });

  t(
    'group since a time: a topic made since is read whole, an older one from that time, a missing one whole',
    async (bus) => {
      const old = `${backend}-since-old`;
      const made = `${backend}-since-new`;
      await bus.produce(old, { payload: 'before' });
      const ms = idMs(await bus.produce(old, { payload: 'before too' })) + 1;
      // A topic made since: its first entry is at least `ms` (Redis IDs never go back in time).
      await new Promise((r) => setTimeout(r, 5));
      await bus.produce(made, { payload: 'n1' });
      // Produced since `ms` to the older topic: read too.
      await bus.produce(old, { payload: 'between' });
      await bus.ensureGroup(old, 'g', { at: 'since', ms });
      await bus.ensureGroup(made, 'g', { at: 'since', ms });
      await bus.ensureGroup(`${backend}-since-none`, 'g', { at: 'since', ms });
      await bus.produce(old, { payload: 'after' });
      await bus.produce(`${backend}-since-none`, { payload: 'm1' });
      const read = async (topic: string) =>
        (await bus.read(topic, 'g', 'c', { cursor: '>', count: 10 })).entries.map((e) => e.fields.payload);
      assert.equal(await read(old), ['between', 'after']);
      assert.equal(await read(made), ['n1']);
      assert.equal(await read(`${backend}-since-none`), ['m1']);
      // An existing group keeps its position.
      await bus.ensureGroup(made, 'g', { at: 'since', ms: 0 });
      assert.equal(await read(made), []);
    },
  );

  t('unacked entries come back from the pending list (cursor 0); acked ones do not', async (bus) => {
    const topic = `${backend}-pel`;
    await bus.ensureGroup(topic, 'g', { at: 'end' });
    const ids = [];
    for (let i = 0; i < 4; i++) ids.push(await bus.produce(topic, { payload: `m${i}` }));
    const r = await bus.read(topic, 'g', 'c1', { cursor: '>', count: 2 });
    assert.is(r.entries.length, 2);
    assert.is(r.lag, 2);
    await bus.ack(topic, 'g', [ids[0]!]);
    const pending = await bus.read(topic, 'g', 'c1', { cursor: '0', count: 10 });
    assert.equal(
      pending.entries.map((e) => e.id),
      [ids[1]],
    );
    assert.equal(
      (await bus.read(topic, 'g', 'c2', { cursor: '0', count: 10 })).entries,
      [],
      'pending lists are per consumer',
    );
  });

  t('group after an id starts right after it', async (bus) => {
    const topic = `${backend}-after`;
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push(await bus.produce(topic, { payload: `m${i}` }));
    await bus.ensureGroup(topic, 'g', { at: 'after', id: ids[0]! });
    assert.equal(
      (await bus.read(topic, 'g', 'c', { cursor: '>', count: 10 })).entries.map((e) => e.id),
      ids.slice(1),
    );
  });

  t('watch wakes on new entries; discovery reports new topics', async (bus) => {
    let woken = 0;
    const stop = bus.watch(`${backend}-w`, () => {
      woken++;
    });
    await eventually(() => woken > 0, 'initial wake', 5000).catch(() => undefined);
    const before = woken;
    await bus.produce(`${backend}-w`, { payload: 'x' });
    await eventually(() => woken > before, 'wake after produce', 5000);
    stop();
    let seen: ReadonlySet<string> = new Set();
    const off = bus.onTopics((t) => {
      seen = t;
    });
    await bus.produce(`${backend}-disc-new`, { payload: 'x' });
    await eventually(() => seen.has(`${backend}-disc-new`), 'topic discovered', 5000);
    off();
  });

  t('a counted ack of many ids in runs of outcomes counts each acknowledged id once', async (bus) => {
    const topic = `${backend}-runs`;
    await bus.ensureGroup(topic, 'g', { at: 'beginning' });
    const n = 1205;
    const ids = await Promise.all(Array.from({ length: n }, (_, i) => bus.produce(topic, { payload: String(i) })));
    for (let read = 0, i = 0; read < n && i < 20; i++)
      read += (await bus.read(topic, 'g', 'c1', { cursor: '>', count: 1000 })).entries.length;
    // The first acknowledged on its own: not counted again below.
    await bus.ack(topic, 'g', [ids[0]!], { as: 'g|s', outcomes: ['dropped'] });
    const outcomes = ids.map((_, i): CountedOutcome =>
      i % 300 === 7 ? 'filtered' : i === 1100 ? 'ignored' : 'delivered',
    );
    // Runs over 1000 ids (the script's XACK chunks), and one id twice in a run: counted once.
    const counts = await bus.ack(topic, 'g', [...ids, ids[5]!], { as: 'g|s', outcomes: [...outcomes, 'delivered'] });
    assert.equal(counts, { delivered: n - 1 - 5, dropped: 1, ignored: 1, filtered: 4 });
    assert.equal(await bus.counts(topic, 'g|s'), counts);
  });

  // Every script and multi-key command of the bus (on Cluster: no CROSSSLOT, each on its slot).
  t('counted acks, rate tokens, rewind, takeover and heartbeats work on every deployment', async (bus) => {
    const topic = `${backend}-scripts`;
    await bus.ensureGroup(topic, 'g', { at: 'beginning' });
    const ids = [await bus.produce(topic, { payload: '1' }), await bus.produce(topic, { payload: '2' })];
    const got = await bus.read(topic, 'g', 'c1', { cursor: '>', count: 10 });
    assert.equal(
      got.entries.map((e) => e.id),
      ids,
    );
    const counts = await bus.ack(topic, 'g', ids, { as: 'g|s', outcomes: ['delivered', 'dropped'] });
    assert.equal(counts, { delivered: 1, dropped: 1, ignored: 0, filtered: 0 });
    assert.equal(await bus.counts(topic, 'g|s'), { delivered: 1, dropped: 1, ignored: 0, filtered: 0 });
    // Acknowledged again: counted once.
    await bus.ack(topic, 'g', ids, { as: 'g|s', outcomes: ['delivered', 'dropped'] });
    assert.equal(await bus.counts(topic, 'g|s'), { delivered: 1, dropped: 1, ignored: 0, filtered: 0 });

    assert.is(await bus.rateToken('w', 'site-a', 1, 1), 0);
    assert.ok((await bus.rateToken('w', 'site-a', 1, 1)) > 0, 'the bucket of one is empty');

    // Rewind to the beginning: both entries come back as new ones.
    await bus.setGroupPosition(topic, 'g', { at: 'beginning' });
    const again = await bus.read(topic, 'g', 'c2', { cursor: '>', count: 10 });
    assert.is(again.entries.length, 2);
    // c2's pending entries are taken over by c3.
    const taken = await bus.claimFrom(topic, 'g', 'c2', 'c3', 0, 10);
    assert.is(taken.entries.length, 2);
    assert.ok(taken.drained);

    await bus.heartbeat(`${backend}-alive`, 60_000);
    await bus.heartbeat(`${backend}-retired`, 60_000);
    await bus.retire(`${backend}-retired`);
    assert.equal(await bus.deadAmong([`${backend}-alive`, `${backend}-retired`, `${backend}-unknown`]), [
      `${backend}-retired`,
      `${backend}-unknown`,
    ]);
    assert.not.ok((await bus.deadConsumers()).includes(`${backend}-alive`));

    await bus.destroyGroup(topic, 'g');
    assert.equal(await bus.counts(topic, 'g|s'), { delivered: 0, dropped: 0, ignored: 0, filtered: 0 });
  });

  t('watch wakes the watchers of several topics at once (on Cluster: several slots)', async (bus) => {
    const topics = ['a', 'b', 'c', 'd', 'e'].map((x) => `${backend}-many-${x}`);
    const woken = new Map(topics.map((t) => [t, 0]));
    const stops = topics.map((t) => bus.watch(t, () => woken.set(t, woken.get(t)! + 1)));
    await eventually(() => [...woken.values()].every((n) => n > 0), 'initial wakes', 10_000);
    const before = new Map(woken);
    for (const t of topics) await bus.produce(t, { payload: 'x' });
    await eventually(() => topics.every((t) => woken.get(t)! > before.get(t)!), 'a wake per topic', 10_000);
    for (const s of stops) s();
    assert.equal((await bus.listTopics()).filter((t) => topics.includes(t)).sort(), topics);
  });

  t('a destroyed group reads as BusError no-group', async (bus) => {
    const topic = `${backend}-gone`;
    await bus.ensureGroup(topic, 'g', { at: 'end' });
    await bus.destroyGroup(topic, 'g');
    await rejects(
      () => bus.read(topic, 'g', 'c', { cursor: '>', count: 1 }),
      (e) => e instanceof BusError && e.code === 'no-group',
    );
  });
});

test('embedded: entries, groups and pending entries survive a reopen', async () => {
  const dir = tempDir('edgeplane-bus-');
  const one = openEmbeddedBus(dir);
  await one.ensureGroup('t', 'g', { at: 'beginning' });
  const a = await one.produce('t', { payload: 'a' });
  const c = await one.produce('t', { payload: 'b' });
  await one.read('t', 'g', 'c', { cursor: '>', count: 10 });
  await one.ack('t', 'g', [a]);
  await one.close();
  const two = openEmbeddedBus(dir);
  assert.is((await two.topicInfo('t'))?.length, 2);
  assert.equal(
    (await two.read('t', 'g', 'c', { cursor: '0', count: 10 })).entries.map((e) => e.id),
    [c],
  );
  assert.equal((await two.read('t', 'g', 'c', { cursor: '>', count: 10 })).entries, []);
  await two.close();
});

test('embedded: a torn last line is cut at open, so the record appended next survives the following restart', async () => {
  const dir = tempDir('edgeplane-bus-');
  const one = openEmbeddedBus(dir);
  await one.produce('t', { payload: 'a' });
  await one.close();
  appendFileSync(join(dir, 'bus.jsonl'), '{"op":"add","topic":"t","id":"9-0","fie');
  const two = openEmbeddedBus(dir);
  assert.is((await two.topicInfo('t'))?.length, 1);
  await two.produce('t', { payload: 'b' });
  await two.close();
  const three = openEmbeddedBus(dir);
  const info = await three.topicInfo('t');
  assert.is(info?.length, 2);
  assert.is(info?.['last-entry']?.payload, 'b');
  await three.close();
});

test('embedded: compaction at open keeps entries, positions and pending entries, drops the rest', async () => {
  const dir = tempDir('edgeplane-bus-');
  const one = openEmbeddedBus(dir);
  await one.ensureGroup('t', 'g', { at: 'beginning' });
  const ids = [];
  for (let i = 0; i < 50; i++) ids.push(await one.produce('t', { payload: `m${i}` }));
  for (let i = 0; i < 49; i++) {
    await one.read('t', 'g', 'c', { cursor: '>', count: 1 });
    await one.ack('t', 'g', [ids[i]!]);
  }
  await one.read('t', 'g', 'c', { cursor: '>', count: 1 });
  await one.close();
  const before = statSync(join(dir, 'bus.jsonl')).size;
  const two = openEmbeddedBus(dir, { compactMinBytes: 0 });
  assert.ok(statSync(join(dir, 'bus.jsonl')).size < before, 'the log shrank');
  await two.close();
  const three = openEmbeddedBus(dir);
  assert.is((await three.topicInfo('t'))?.length, 50);
  assert.equal(
    (await three.read('t', 'g', 'c', { cursor: '0', count: 10 })).entries.map((e) => e.id),
    [ids[49]],
  );
  await three.produce('t', { payload: 'new' });
  assert.equal(
    (await three.read('t', 'g', 'c', { cursor: '>', count: 10 })).entries.map((e) => e.fields.payload),
    ['new'],
  );
  await three.close();
});

test('redis: two connections for many watched topics', async () => {
  const redisUrl = await freshRedisDb();
  const bus = await openRedisBus(redisUrl);
  for (let i = 0; i < 200; i++) bus.watch(`many-${i}`, () => undefined);
  const c = createClient({ url: redisUrl });
  await c.connect();
  await eventually(
    async () => String(await c.sendCommand(['CLIENT', 'LIST'])).includes('edgeplane-bus-notifier'),
    'notifier named',
  );
  const list = String(await c.sendCommand(['CLIENT', 'LIST']));
  assert.is(list.split('\n').filter((l) => /name=edgeplane-bus-/.test(l)).length, 2);
  await c.close();
  await bus.close();
});

test('redis: a counted ack after SCRIPT FLUSH (a restarted Redis) sends the script again and counts', async () => {
  const redisUrl = await freshRedisDb();
  const bus = await openRedisBus(redisUrl);
  const c = createClient({ url: redisUrl });
  await c.connect();
  try {
    await bus.ensureGroup('flushed', 'g', { at: 'beginning' });
    const ids = [await bus.produce('flushed', { payload: '1' }), await bus.produce('flushed', { payload: '2' })];
    await bus.read('flushed', 'g', 'c1', { cursor: '>', count: 10 });
    await bus.ack('flushed', 'g', [ids[0]!], { as: 'g|s', outcomes: ['delivered'] });
    await c.sendCommand(['SCRIPT', 'FLUSH']);
    const counts = await bus.ack('flushed', 'g', [ids[1]!], { as: 'g|s', outcomes: ['dropped'] });
    assert.equal(counts, { delivered: 1, dropped: 1, ignored: 0, filtered: 0 });
    const pending = (await c.sendCommand(['XPENDING', 'volga:flushed', 'g'])) as unknown as unknown[];
    assert.is(Number(pending[0]), 0);
  } finally {
    await c.close();
    await bus.close();
  }
});

test.run();
