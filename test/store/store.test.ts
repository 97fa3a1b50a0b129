/**
 * The Store contract against both backends (test/helpers/store-suite.ts), then what only one
 * backend has: the embedded file (restart, torn record, compaction) and the Redis layout.
 * Redis: databases 5 and 7 of the runner's redis-server, emptied before use.
 */
import { appendFileSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createClient } from 'redis';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { ApiError } from '../../src/lib/errors.js';
import { openEmbeddedStore } from '../../src/store/embedded.js';
import { etagOf } from '../../src/store/etag.js';
import { openStore } from '../../src/store/index.js';
import { commitArgs, openRedisStore } from '../../src/store/redis.js';
import { changesChannel } from '../../src/store/redis-lua.js';
import type { Store } from '../../src/store/store.js';
import { rejects } from '../helpers/assert.js';
import { freshRedisDb, redisTestUrl, startRedis } from '../helpers/redis.js';
import { forEachDeployment, openTestStore, tempDir } from '../helpers/backends.js';
import { storeSuite } from '../helpers/store-suite.js';
import { eventually } from '../helpers/wait.js';

/** Database 5 of the runner's redis-server, emptied, and a Redis store on it. */
async function freshRedis(): Promise<Store> {
  return openRedisStore(await freshRedisDb(5));
}
const redisUrl = `${redisTestUrl()}/5`;

forEachDeployment((deployment) => storeSuite(deployment, () => openTestStore(deployment, { db: 5 })).run());

// ---- embedded only --------------------------------------------------------------------

const embedded = suite('embedded store file');

embedded('configuration, revision and durable kv survive a reopen; TTL kv does not', async () => {
  const dir = tempDir();
  const a = await openEmbeddedStore(dir);
  await a.commit([
    { op: 'put', key: 't/x', value: { n: 1 } },
    { op: 'put', key: 't/y', value: { s: 'é\n"' } },
  ]);
  await a.commit([{ op: 'delete', key: 't/x' }]);
  await a.commit([{ op: 'put', key: 't/z', value: { n: 3 } }]);
  await a.kvSet('durable', 'd');
  await a.kvSet('gone', 'g');
  await a.kvDel('gone');
  await a.kvSet('was-durable', 'old');
  await a.kvSet('was-durable', 'new', 600_000);
  await a.kvIncr('count', 2);
  await a.kvIncr('count', 3);
  await a.kvSet('ttl', 't', 600_000);
  await a.close();

  const b = await openEmbeddedStore(dir);
  assert.equal(await b.list(''), [
    { key: 't/y', value: { s: 'é\n"' }, etag: etagOf({ s: 'é\n"' }) },
    { key: 't/z', value: { n: 3 }, etag: etagOf({ n: 3 }) },
  ]);
  assert.is(await b.revision(), 3);
  assert.equal(await b.kvKeys(''), ['count', 'durable']);
  assert.is(await b.kvGet('count'), '5');
  const r = await b.commit([{ op: 'put', key: 't/z', value: { n: 4 }, expect: etagOf({ n: 3 }) }]);
  assert.equal(r.ok && r.revision, 4);
  await b.close();
});

embedded('a durable TTL value (a login token) survives a reopen until it expires; others do not', async () => {
  const dir = tempDir();
  const a = await openEmbeddedStore(dir);
  await a.kvSet('token:long', 'L', 600_000, { durable: true });
  await a.kvSet('token:short', 'S', 50, { durable: true });
  await a.kvSet('token:gone', 'G', 600_000, { durable: true });
  await a.kvDel('token:gone');
  await a.kvSet('throttle', 'T', 600_000);
  await a.kvSet('was-durable', 'D', 600_000, { durable: true });
  await a.kvSet('was-durable', 'M', 600_000); // now a memory-only value: the file forgets it
  await a.kvSet('count', '1', 600_000, { durable: true });
  assert.is(await a.kvIncr('count', 2), 3);
  await a.close();
  await new Promise((r) => setTimeout(r, 100)); // token:short expires while the store is closed

  const b = await openEmbeddedStore(dir);
  assert.is(await b.kvGet('token:long'), 'L');
  assert.is(await b.kvGet('token:short'), undefined, 'expired while closed');
  assert.is(await b.kvGet('token:gone'), undefined, 'deleted');
  assert.is(await b.kvGet('throttle'), undefined, 'not durable');
  assert.is(await b.kvGet('was-durable'), undefined);
  assert.is(await b.kvGet('count'), '3', 'an increment of a durable value is kept');
  assert.equal(await b.kvKeys('token:'), ['token:long']);
  await b.close();

  // Compaction keeps what is live, with its expiry.
  const c = await openEmbeddedStore(dir, { compactMinBytes: 0 });
  assert.is(await c.kvGet('token:long'), 'L');
  await c.close();
  const lines = readFileSync(join(dir, 'store.aof'), 'utf8').split('\n').filter(Boolean);
  const kept = lines.map((l) => JSON.parse(l) as { kv?: string; x?: number }).filter((r) => r.kv !== undefined);
  assert.equal(kept.map((r) => r.kv).sort(), ['count', 'token:long']);
  assert.ok(
    kept.every((r) => typeof r.x === 'number' && r.x > Date.now()),
    'each with its expiry',
  );
});

embedded('a torn last record is dropped and cut, later commits still persist', async () => {
  const dir = tempDir();
  const a = await openEmbeddedStore(dir);
  await a.commit([{ op: 'put', key: 't/x', value: { n: 1 } }]);
  await a.close();
  appendFileSync(join(dir, 'store.aof'), '{"r":2,"c":[{"k":"t/y","v":{"n"');

  const b = await openEmbeddedStore(dir);
  assert.equal(
    (await b.list('')).map((e) => e.key),
    ['t/x'],
  );
  assert.is(await b.revision(), 1);
  await b.commit([{ op: 'put', key: 't/y', value: { n: 2 } }]);
  await b.close();

  const c = await openEmbeddedStore(dir);
  assert.equal(
    (await c.list('')).map((e) => e.key),
    ['t/x', 't/y'],
  );
  assert.is(await c.revision(), 2);
  await c.close();
});

embedded('a damaged record before the end makes open fail', async () => {
  const dir = tempDir();
  writeFileSync(join(dir, 'store.aof'), '{"r":1,"c":[]}\nnot json\n{"r":2,"c":[]}\n');
  await rejects(
    () => openEmbeddedStore(dir),
    (e) => e instanceof Error && /line 2/.test(e.message),
  );
});

embedded('open compacts a file much larger than its live data, keeping the state', async () => {
  const dir = tempDir();
  const a = await openEmbeddedStore(dir);
  for (let i = 0; i < 500; i++) await a.commit([{ op: 'put', key: 't/x', value: { i, pad: 'x'.repeat(100) } }]);
  await a.commit([{ op: 'put', key: 't/keep', value: { ok: true } }]);
  await a.kvSet('k', 'v');
  await a.close();
  const before = statSync(join(dir, 'store.aof')).size;

  const b = await openEmbeddedStore(dir, { compactMinBytes: 0 });
  const after = statSync(join(dir, 'store.aof')).size;
  assert.ok(after * 10 < before, `file shrank: ${before} → ${after}`);
  assert.equal((await b.get('t/x'))?.value, { i: 499, pad: 'x'.repeat(100) });
  assert.is(await b.revision(), 501);
  await b.commit([{ op: 'delete', key: 't/keep' }]);
  await b.close();

  const c = await openEmbeddedStore(dir);
  assert.equal(
    (await c.list('')).map((e) => e.key),
    ['t/x'],
  );
  assert.is(await c.kvGet('k'), 'v');
  assert.is(await c.revision(), 502);
  assert.is(
    readFileSync(join(dir, 'store.aof'), 'utf8').split('\n').filter(Boolean).length,
    5,
    'snapshot of 4 records + 1 commit',
  );
  await c.close();
});

embedded('a list read is kept until a commit under its prefix, and commits elsewhere keep it', async () => {
  const s = await openEmbeddedStore(tempDir());
  await s.commit([
    { op: 'put', key: 't/a/1', value: { n: 1 } },
    { op: 'put', key: 't/b/1', value: { n: 2 } },
  ]);
  const first = await s.list('t/a');
  await s.commit([{ op: 'put', key: 't/b/2', value: { n: 3 } }]);
  await s.commit([{ op: 'put', key: 't/ab', value: { n: 4 } }]);
  assert.ok((await s.list('t/a')) === first, 'commits outside t/a keep its list');
  await s.commit([{ op: 'put', key: 't/a/2', value: { n: 5 } }]);
  assert.equal(
    (await s.list('t/a')).map((e) => e.key),
    ['t/a/1', 't/a/2'],
  );
  const all = await s.list('');
  await s.commit([{ op: 'delete', key: 't/a/1' }]);
  assert.ok((await s.list('')) !== all);
  assert.equal(
    (await s.list('t/a')).map((e) => e.key),
    ['t/a/2'],
  );
  assert.equal(
    (await s.list('')).map((e) => e.key),
    ['t/a/2', 't/ab', 't/b/1', 't/b/2'],
  );
  await s.close();
});

embedded('openStore picks embedded without a Redis URL', async () => {
  const dir = tempDir();
  const s = await openStore({ redis: undefined, dataDir: join(dir, 'nested') });
  assert.is(s.kind, 'embedded');
  await s.commit([{ op: 'put', key: 'x', value: {} }]);
  await s.close();
  assert.ok(statSync(join(dir, 'nested', 'store.aof')).size > 0);
});

embedded.run();

// ---- redis only -----------------------------------------------------------------------

const redis = suite('redis store layout and failures');

redis('script arguments: ops packed 5 fields each; change channel per database', () => {
  const { keys, args, etags } = commitArgs(
    [
      { op: 'put', key: 'a/b', value: { n: 1 }, expect: null },
      { op: 'delete', key: 'a/c', expect: '"e1"' },
      { op: 'put', key: 'a/d', value: {}, expect: '*' },
      { op: 'delete', key: 'a/e' },
    ],
    'ep:changes',
  );
  assert.equal(keys, [
    'ep:cfg:a/b',
    'ep:cfg:a/c',
    'ep:cfg:a/d',
    'ep:cfg:a/e',
    'ep:cfg-index',
    'ep:rev',
    'ep:cfg-history',
    'ep:cfg-changed',
  ]);
  assert.equal(args, [
    '4',
    'ep:changes',
    'put',
    'a/b',
    'n',
    '',
    `${etagOf({ n: 1 })}\n{"n":1}`,
    'delete',
    'a/c',
    'e',
    '"e1"',
    '',
    'put',
    'a/d',
    '*',
    '',
    `${etagOf({})}\n{}`,
    'delete',
    'a/e',
    '',
    '',
    '',
    // no revision note; the oldest history entry kept (MINID); the commit's mark
    '',
    args[args.length - 2] as string,
    args[args.length - 1] as string,
  ]);
  assert.match(args[args.length - 2] as string, /^\d+-0$/);
  assert.match(args[args.length - 1] as string, /^[A-Za-z0-9_-]{8}$/);
  assert.equal(etags, { 'a/b': etagOf({ n: 1 }), 'a/d': etagOf({}) });
  assert.is(changesChannel('redis://h:1'), 'ep:changes');
  assert.is(changesChannel('redis://h:1/0'), 'ep:changes');
  assert.is(changesChannel('redis://h:1/5'), 'ep:changes:5');
});

redis('stores on different databases of one server do not hear each other', async () => {
  const a = await freshRedis();
  const b = await openRedisStore(await freshRedisDb(7));
  try {
    const seen: string[] = [];
    a.onChange((keys) => seen.push(...keys));
    await a.revision();
    await b.commit([{ op: 'put', key: 'from-7', value: {} }]);
    await a.commit([{ op: 'put', key: 'from-5', value: {} }]);
    await eventually(() => seen.includes('from-5'), 'own change delivered');
    assert.equal(seen, ['from-5']);
    assert.is(await a.get('from-7'), undefined);
  } finally {
    await a.close();
    await b.close();
  }
});

redis('layout is readable with a second client', async () => {
  const store = await freshRedis();
  const raw = createClient({ url: redisUrl });
  await raw.connect();
  try {
    await store.commit([{ op: 'put', key: 'default/hooks/h1', value: { b: 2, a: 'x' } }]);
    await store.kvSet('token:abc', 'v', 60_000);
    assert.equal(JSON.parse((await raw.hGet('ep:cfg:default/hooks/h1', 'v')) ?? ''), { b: 2, a: 'x' });
    assert.is(await raw.hGet('ep:cfg:default/hooks/h1', 'e'), etagOf({ a: 'x', b: 2 }));
    assert.equal(await raw.zRange('ep:cfg-index', 0, -1), ['default/hooks/h1']);
    assert.is(await raw.get('ep:rev'), '1');
    const [rev, mark, keys] = ((await raw.lIndex('ep:cfg-changed', 0)) ?? '').split(' ');
    assert.equal([rev, JSON.parse(keys ?? '')], ['1', ['default/hooks/h1']]);
    assert.match(mark ?? '', /^[A-Za-z0-9_-]{8}$/);
    assert.is(await raw.get('ep:kv:token:abc'), 'v');
    const ttl = await raw.pTTL('ep:kv:token:abc');
    assert.ok(ttl > 0 && ttl <= 60_000);
    await raw.hSet('ep:cfg:default/hooks/h1', 'v', '[1]');
    await rejects(
      () => store.get('default/hooks/h1'),
      (e) => e instanceof ApiError && e.code === 'internal',
    );
  } finally {
    await raw.close();
    await store.close();
  }
});

redis('kvIncr sets the expiry only on a new key', async () => {
  const store = await freshRedis();
  const raw = createClient({ url: redisUrl });
  await raw.connect();
  try {
    await store.kvSet('plain', '7');
    assert.is(await store.kvIncr('plain', 1, 60_000), 8);
    assert.is(await raw.pTTL('ep:kv:plain'), -1);
    await store.kvIncr('fresh', 1, 60_000);
    assert.ok((await raw.pTTL('ep:kv:fresh')) > 0);
  } finally {
    await raw.close();
    await store.close();
  }
});

redis('commit scripts are re-sent after SCRIPT FLUSH', async () => {
  const store = await freshRedis();
  const raw = createClient({ url: redisUrl });
  await raw.connect();
  try {
    await store.commit([{ op: 'put', key: 'a', value: { n: 1 } }]);
    await raw.scriptFlush();
    const r = await store.commit([{ op: 'put', key: 'a', value: { n: 2 }, expect: etagOf({ n: 1 }) }]);
    assert.equal(r.ok && r.revision, 2);
  } finally {
    await raw.close();
    await store.close();
  }
});

redis('Redis down: calls reject with unavailable, and work again after it restarts', async () => {
  const server = await startRedis();
  const store = await openStore({ redis: { kind: 'standalone', url: server.url }, dataDir: tempDir() });
  assert.is(store.kind, 'redis');
  try {
    await store.commit([{ op: 'put', key: 'a', value: { n: 1 } }]);
    await server.stop();
    await rejects(
      () => store.get('a'),
      (e) => e instanceof ApiError && e.code === 'unavailable',
    );
    await rejects(
      () => store.commit([{ op: 'put', key: 'b', value: {} }]),
      (e) => e instanceof ApiError && e.code === 'unavailable',
    );
    await server.restart();
    // The server kept no data (no persistence): success means the client reconnected. Reads and
    // commits have connections of their own, each reconnecting on its own back-off: both are
    // waited for (the read's coming back first is no sign of the commit's).
    await eventually(
      async () =>
        await store.get('a').then(
          () => true,
          () => false,
        ),
      'reads usable after restart',
    );
    const committed = await eventually(
      async () =>
        await store.commit([{ op: 'put', key: 'b', value: {} }]).catch((e: unknown) => {
          // Only "unavailable" means not reconnected yet; anything else fails the test at once.
          if (e instanceof ApiError && e.code === 'unavailable') return null;
          throw e;
        }),
      'commits usable after restart',
    );
    assert.ok(committed.ok);
  } finally {
    await store.close();
    await server.stop();
  }
});

redis.run();
