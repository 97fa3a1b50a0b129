/**
 * The Redis store's list cache (src/store/list-cache.ts): a list read within the cache's age
 * costs no value read (Redis counts no HMGET), a process sees its own commits at once and
 * another process's as soon as their notification arrives (additions, changes, deletions),
 * a change that bypassed the notifications is found by the ETag check after the age, a
 * refresh in flight makes a later read wait for it, and nothing is kept while not live.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createClient } from 'redis';
import { openRedisStore } from '../../src/store/redis.js';
import { createListCache, type ListSource } from '../../src/store/list-cache.js';
import { freshRedisDb } from '../helpers/redis.js';
import type { Entry } from '../../src/store/store.js';
import { eventually } from '../helpers/wait.js';

async function hmgetCalls(url: string): Promise<number> {
  const c = createClient({ url });
  await c.connect();
  try {
    const info = await c.info('commandstats');
    return Number(/cmdstat_hmget:calls=(\d+)/.exec(info)?.[1] ?? 0);
  } finally {
    await c.quit();
  }
}

const names = (entries: Entry[]) => entries.map((e) => `${e.key}=${String(e.value.n)}`);

test('two stores on one Redis: cached list reads, own commits at once, the other store’s after its notification', async () => {
  const url = await freshRedisDb(4);
  const a = await openRedisStore(url);
  const b = await openRedisStore(url);
  const stop = a.onChange(() => {});
  try {
    const ops = Array.from({ length: 50 }, (_, i) => ({
      op: 'put' as const,
      key: `t/l/k${String(i).padStart(2, '0')}`,
      value: { n: i },
    }));
    assert.ok((await a.commit([...ops, { op: 'put', key: 't/other', value: { n: -1 } }])).ok);
    // Live once the subscription is up: a read then fills the cache.
    await eventually(async () => {
      await a.list('t/l');
      const before = await hmgetCalls(url);
      await a.list('t/l');
      return (await hmgetCalls(url)) === before;
    }, 'a second list read costs no HMGET');
    const first = await a.list('t/l');
    assert.is(first.length, 50);
    assert.ok(Object.isFrozen(first[0]?.value), 'values are frozen');
    assert.ok(Object.isFrozen(first), 'and so is the array');

    // Own commit: seen at once (a put, a delete, a new key).
    assert.ok(
      (
        await a.commit([
          { op: 'put', key: 't/l/k00', value: { n: 100 } },
          { op: 'delete', key: 't/l/k01' },
          { op: 'put', key: 't/l/k99', value: { n: 99 } },
        ])
      ).ok,
    );
    const own = names(await a.list('t/l'));
    assert.is(own.length, 50);
    assert.is(own[0], 't/l/k00=100');
    assert.ok(!own.some((x) => x.startsWith('t/l/k01=')), 'deleted');
    assert.is(own[own.length - 1], 't/l/k99=99', 'added, in key order');

    // The other store's commit: after its notification.
    assert.ok(
      (
        await b.commit([
          { op: 'put', key: 't/l/k02', value: { n: 202 } },
          { op: 'delete', key: 't/l/k03' },
        ])
      ).ok,
    );
    await eventually(async () => {
      const now = names(await a.list('t/l'));
      return now.includes('t/l/k02=202') && !now.some((x) => x.startsWith('t/l/k03='));
    }, 'the notification reaches the cached list');
    // A key outside the prefix and the whole tree.
    assert.equal(names(await a.list('t/other')), ['t/other=-1']);
    assert.is((await a.list('')).length, 50);

    // A change behind the store's back (no notification): found by the ETag check within the age.
    const raw = createClient({ url });
    await raw.connect();
    try {
      await raw.hSet('ep:cfg:t/l/k04', { v: JSON.stringify({ n: 404 }), e: '"changed-behind"' });
    } finally {
      await raw.quit();
    }
    await eventually(async () => names(await a.list('t/l')).includes('t/l/k04=404'), 'the ETag check', {
      timeoutMs: 10_000,
    });
  } finally {
    stop();
    await a.close();
    await b.close();
  }
});

test('a read during a refresh waits for it; not live: nothing kept', async () => {
  const entry = (key: string, n: number): Entry => ({ key, value: { n }, etag: `"${n}"` });
  const store = new Map<string, Entry>([['p/a', entry('p/a', 1)]]);
  let alls = 0;
  let gate: Promise<void> | undefined;
  const source: ListSource = {
    async all(prefix) {
      alls++;
      return [...store.values()].filter((e) => e.key.startsWith(prefix + '/'));
    },
    async some(keys) {
      await gate;
      return new Map(keys.flatMap((k) => (store.has(k) ? [[k, store.get(k) as Entry] as const] : [])));
    },
    async etags() {
      return new Map([...store].map(([k, e]) => [k, e.etag]));
    },
  };
  const cache = createListCache(source, { maxAgeMs: 60_000, maxLists: 8 });
  await cache.list('p');
  await cache.list('p');
  assert.is(alls, 2, 'not live: every read goes to the store');
  cache.setLive(true);
  await cache.list('p');
  await cache.list('p');
  assert.is(alls, 3, 'live: the second read is cached');

  let open: () => void = () => {};
  gate = new Promise((r) => (open = r));
  store.set('p/a', entry('p/a', 2));
  cache.invalidate(['p/a']);
  const first = cache.list('p');
  store.set('p/a', entry('p/a', 3));
  cache.invalidate(['p/a']);
  const second = cache.list('p');
  open();
  assert.equal(
    (await first).map((e) => e.value.n),
    [3],
  );
  assert.equal(
    (await second).map((e) => e.value.n),
    [3],
    'the later read saw the later change',
  );
  cache.setLive(false);
  await cache.list('p');
  assert.is(alls, 4, 'cleared when the subscription drops');
});

test.run();
