/**
 * CONTRACT §10: a write answered 2xx waits for one replica (WAIT 1 <REDIS_REPLICA_TIMEOUT>)
 * when the primary has one; when none confirms in time the write fails with 503
 * `not-replicated` (and is on the primary). A real primary and replica; the replica is made
 * unresponsive with DEBUG SLEEP (its link stays up, so the primary still counts it). On a
 * Redis Cluster, WAIT goes to the primary of the written key's slot: freezing that primary's
 * replica refuses the write, a write to a slot of another primary is confirmed as usual.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openRedisBus } from '../../src/bus/redis-bus.js';
import { ApiError } from '../../src/lib/errors.js';
import type { RedisTarget } from '../../src/lib/redis.js';
import { openRedisStore } from '../../src/store/redis.js';
import { startRedis, type RedisServer } from '../helpers/redis.js';
import { ask, askAll, startRedisCluster } from '../helpers/redis-deployments.js';
import { eventually } from '../helpers/wait.js';

async function pair(): Promise<{ primary: RedisServer; replica: RedisServer; target: RedisTarget }> {
  const primary = await startRedis();
  const replica = await startRedis({
    args: ['--replicaof', '127.0.0.1', String(primary.port), '--enable-debug-command', 'yes'],
  });
  await eventually(
    async () => /master_link_status:up/.test(String(await ask(replica.port, ['INFO', 'replication']))),
    'the replica in sync',
    20_000,
  );
  return { primary, replica, target: { kind: 'standalone', url: primary.url, replicaTimeoutMs: 2000 } };
}

/** The replica stops answering for `seconds` (the command is not awaited: it blocks the server). */
function freeze(replica: RedisServer, seconds: number): void {
  void ask(replica.port, ['DEBUG', 'SLEEP', String(seconds)]);
}

async function notReplicated(p: Promise<unknown>): Promise<ApiError> {
  try {
    await p;
  } catch (err) {
    assert.instance(err, ApiError);
    const e = err as ApiError;
    assert.is(e.info?.code, 'not-replicated');
    assert.match(e.message, /on the Redis primary/);
    assert.match(e.message, /may be lost at a failover/);
    return e;
  }
  throw new Error('the write was answered although no replica confirmed it');
}

test('store: commits and durable kv wait for the replica; none in time → not-replicated, kept on the primary', async () => {
  const { primary, replica, target } = await pair();
  const store = await openRedisStore(target);
  try {
    const ok = await store.commit([{ op: 'put', key: 't/a', value: { n: 1 } }]);
    assert.ok(ok.ok);
    assert.is(await ask(replica.port, ['HGET', 'ep:cfg:t/a', 'e']), ok.ok ? ok.etags['t/a'] : '', 'on the replica');
    freeze(replica, 8);
    await new Promise((r) => setTimeout(r, 300));
    await notReplicated(store.commit([{ op: 'put', key: 't/b', value: { n: 2 } }]));
    assert.equal((await store.get('t/b', { fresh: true }))?.value, { n: 2 }, 'the change is on the primary');
    await notReplicated(store.kvSet('token', 'x', 60_000, { durable: true }));
    await store.kvSet('heartbeat', 'y', 60_000); // not durable: no wait
    await eventually(async () => (await ask(replica.port, ['PING'])) === 'PONG', 'the replica awake', 20_000);
    assert.ok((await store.commit([{ op: 'put', key: 't/c', value: { n: 3 } }])).ok, 'confirmed again');
  } finally {
    await store.close();
    await replica.dispose();
    await primary.dispose();
  }
});

test('bus: produce and a group position wait for the replica; none in time → not-replicated', async () => {
  const { primary, replica, target } = await pair();
  const bus = await openRedisBus(target);
  try {
    const id = await bus.produce('t', { payload: '1' });
    assert.ok(/^\d+-\d+$/.test(id));
    freeze(replica, 8);
    await new Promise((r) => setTimeout(r, 300));
    await notReplicated(bus.produce('t', { payload: '2' }));
    await notReplicated(bus.setGroupPosition('t', 'g', { at: 'beginning' }));
  } finally {
    await bus.close();
    await replica.dispose();
    await primary.dispose();
  }
});

test('without a replica nothing waits', async () => {
  const primary = await startRedis();
  const store = await openRedisStore({ kind: 'standalone', url: primary.url, replicaTimeoutMs: 60_000 });
  try {
    assert.ok((await store.commit([{ op: 'put', key: 't/a', value: { n: 1 } }])).ok);
  } finally {
    await store.close();
    await primary.dispose();
  }
});

test('a replica still in its first sync is not waited for (it receives the whole dataset when done)', async () => {
  // The primary delays a new replica's diskless sync by 5 s (Redis 7's default): meanwhile the
  // replica is connected (connected_slaves:1) but acknowledges nothing.
  const primary = await startRedis({ args: ['--repl-diskless-sync', 'yes', '--repl-diskless-sync-delay', '5'] });
  const replica = await startRedis({ args: ['--replicaof', '127.0.0.1', String(primary.port)] });
  const store = await openRedisStore({ kind: 'standalone', url: primary.url, replicaTimeoutMs: 1000 });
  try {
    const info = await eventually(async () => {
      const text = String(await ask(primary.port, ['INFO', 'replication']));
      return /^slave0:.*state=(wait_bgsave|send_bulk)/m.test(text) ? text : undefined;
    }, 'the replica connected, in its first sync');
    assert.match(info, /connected_slaves:1/);
    assert.ok((await store.commit([{ op: 'put', key: 't/a', value: { n: 1 } }])).ok, 'answered, not not-replicated');
  } finally {
    await store.close();
    await replica.dispose();
    await primary.dispose();
  }
});

test('Cluster: WAIT on the primary of the written key; its replica frozen → not-replicated, other slots confirmed', async () => {
  const c = await startRedisCluster({ debug: true });
  const target: RedisTarget = { kind: 'cluster', nodes: c.nodes, replicaTimeoutMs: 2000 };
  const store = await openRedisStore(target);
  const bus = await openRedisBus(target);
  try {
    assert.ok((await store.commit([{ op: 'put', key: 't/a', value: { n: 1 } }])).ok);
    const configReplica = await c.replicaOf('{ep}:rev');
    const onReplica = await askAll(configReplica, [['READONLY'], ['HGET', '{ep}:cfg:t/a', 'e']]);
    assert.ok(onReplica?.[1], 'on the replica of the {ep} slot');
    // A topic whose slot another primary serves (slots 0-5460, 5461-10922, 10923-16383 by default).
    const configPrimary = await c.primaryOf('{ep}:rev');
    let other = '';
    for (let i = 0; i < 100 && !other; i++) if ((await c.primaryOf(`volga:t${i}`)) !== configPrimary) other = `t${i}`;
    assert.ok(other, 'a topic on another primary');
    freeze({ port: configReplica } as RedisServer, 8);
    await new Promise((r) => setTimeout(r, 300));
    await notReplicated(store.commit([{ op: 'put', key: 't/b', value: { n: 2 } }]));
    assert.equal((await store.get('t/b', { fresh: true }))?.value, { n: 2 }, 'the change is on the primary');
    assert.ok(/^\d+-\d+$/.test(await bus.produce(other, { payload: '1' })), 'another slot: confirmed by its replica');
    await eventually(async () => (await ask(configReplica, ['PING'])) === 'PONG', 'the replica awake', 20_000);
    assert.ok((await store.commit([{ op: 'put', key: 't/c', value: { n: 3 } }])).ok, 'confirmed again');
  } finally {
    await bus.close();
    await store.close();
    await c.stop();
  }
});

test.run();
