/**
 * The Redis store's read cache: a process sees its own commits at once, another process's
 * commits as soon as their notification arrives (fresh reads at once), a read racing an
 * invalidation is not kept, entries expire, and nothing is kept while not live.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openRedisStore } from '../../src/store/redis.js';
import { createReadCache } from '../../src/store/read-cache.js';
import { freshRedisDb } from '../helpers/redis.js';
import type { Entry } from '../../src/store/store.js';
import { eventually } from '../helpers/wait.js';

const entry = (key: string, n: number): Entry => ({ key, value: { n }, etag: `"${n}"` });

test("two stores on one Redis: own commits at once, the other's after its notification", async () => {
  const url = await freshRedisDb(3);
  const a = await openRedisStore(url);
  const b = await openRedisStore(url);
  // The cache is live while the store's change subscription runs: a listener starts it.
  const stop = a.onChange(() => {});
  try {
    assert.ok((await a.commit([{ op: 'put', key: 't/x', value: { n: 1 }, expect: null }])).ok);
    assert.equal((await a.get('t/x'))?.value, { n: 1 });
    // Make sure A's cache is live (its subscription is up) and holds the object.
    await eventually(async () => (await a.get('t/x'))?.value.n === 1, 'cached read');
    const cur = await b.get('t/x', { fresh: true });
    assert.ok((await b.commit([{ op: 'put', key: 't/x', value: { n: 2 }, expect: cur?.etag }])).ok);
    assert.equal((await a.get('t/x', { fresh: true }))?.value, { n: 2 }, 'a fresh read sees it at once');
    await eventually(async () => (await a.get('t/x'))?.value.n === 2, 'the cached read follows the notification');
    assert.ok((await a.commit([{ op: 'put', key: 't/x', value: { n: 3 } }])).ok);
    assert.equal((await a.get('t/x'))?.value, { n: 3 }, 'own commit: at once');
    assert.ok((await a.commit([{ op: 'delete', key: 't/x' }])).ok);
    assert.is(await a.get('t/x'), undefined);
  } finally {
    stop();
    await a.close();
    await b.close();
  }
});

test('a read that races an invalidation is not kept', async () => {
  const cache = createReadCache({ maxAgeMs: 60_000, maxEntries: 100 });
  cache.setLive(true);
  let release: (e: Entry) => void = () => {};
  const pending = cache.load(
    'k',
    () =>
      new Promise<Entry>((r) => {
        release = r;
      }),
  );
  cache.invalidate(['k']);
  release(entry('k', 1));
  assert.equal((await pending)?.value, { n: 1 }, 'the caller gets what it read');
  assert.is(cache.lookup('k'), 'miss', 'but it is not cached');
  await cache.load('k', async () => entry('k', 2));
  assert.equal((cache.lookup('k') as Entry).value, { n: 2 });
});

test('entries expire, are frozen, and nothing is kept while not live', async () => {
  let now = 1000;
  const cache = createReadCache({ maxAgeMs: 500, maxEntries: 100, now: () => now });
  await cache.load('k', async () => entry('k', 1));
  assert.is(cache.lookup('k'), 'miss', 'not live: not kept');
  cache.setLive(true);
  const got = await cache.load('k', async () => entry('k', 1));
  assert.ok(Object.isFrozen(got?.value));
  assert.equal((cache.lookup('k') as Entry).value, { n: 1 });
  now += 501;
  assert.is(cache.lookup('k'), 'miss', 'expired');
  await cache.load('k', async () => entry('k', 1));
  cache.setLive(false);
  assert.is(cache.lookup('k'), 'miss', 'cleared when the subscription drops');
});

test.run();
