/**
 * The incremental snapshot reader (src/store/snapshot.ts) on both backends: each read equals a
 * full list at that revision, names exactly the keys changed since the previous read, reads
 * only those (and only their ETags: store.etagsSince), and starts over when a commit lands
 * between the ETags and the values.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { snapshotReader } from '../../src/store/snapshot.js';
import type { Store } from '../../src/store/store.js';
import { forEachBackend, openTestStore } from '../helpers/backends.js';

async function put(store: Store, key: string, value: Record<string, unknown>): Promise<void> {
  assert.ok((await store.commit([{ op: 'put', key, value: value as never }])).ok, key);
}

async function listed(store: Store) {
  const all = await store.list('');
  return {
    values: all.map((e) => [e.key, e.value]),
    etags: all.map((e) => [e.key, e.etag]).sort(),
  };
}

forEachBackend((backend) => {
  const test = suite<{ store: Store }>(`snapshot reader (${backend})`);
  test.before.each(async (ctx) => {
    ctx.store = await openTestStore(backend);
  });
  test.after.each(async ({ store }) => {
    await store.close();
  });

  test('each read is the whole configuration at its revision, with the keys changed since the last', async ({
    store,
  }) => {
    const reader = snapshotReader(store);
    for (const k of ['t/b', 't/a', 't/c']) await put(store, k, { k });
    const first = (await reader.read())!;
    assert.is(first.revision, 3);
    assert.equal([...first.changed].sort(), ['t/a', 't/b', 't/c'], 'everything at the first read');
    assert.equal([...first.values], (await listed(store)).values, 'in key order');

    const again = (await reader.read())!;
    assert.equal([...again.changed], [], 'nothing changed');
    assert.is(again.values, first.values, 'the same view when the revision did not move');

    await put(store, 't/a', { k: 'a', n: 2 });
    await store.commit([{ op: 'delete', key: 't/b' }]);
    await put(store, 't/d', { k: 'd' });
    await put(store, 't/c', { k: 't/c' }); // the same content: the same ETag, not a change
    const third = (await reader.read())!;
    assert.is(third.revision, 7);
    assert.equal([...third.changed].sort(), ['t/a', 't/b', 't/d']);
    const now = await listed(store);
    assert.equal([...third.values], now.values);
    assert.equal([...third.etags].sort(), now.etags);
  });

  test('only the changed objects are read; a commit between ETags and values makes it read again', async ({
    store,
  }) => {
    for (let i = 0; i < 20; i++) await put(store, `t/${i}`, { i });
    let gets = 0;
    let lists = 0;
    let fullReads = 0;
    let interfere: (() => Promise<void>) | undefined;
    // A commit right after the ETags were read.
    const interfering = async <T>(r: T): Promise<T> => {
      const f = interfere;
      interfere = undefined;
      await f?.();
      return r;
    };
    const counting: Store = {
      ...store,
      etags: async (prefix) => {
        fullReads++;
        return interfering(await store.etags(prefix));
      },
      etagsSince: async (at) => interfering(await store.etagsSince(at)),
      get: (key, opts) => {
        gets++;
        return store.get(key, opts);
      },
      list: (prefix) => {
        lists++;
        return store.list(prefix);
      },
    };
    const reader = snapshotReader(counting);
    await reader.read();
    assert.is(lists, 1, 'the first read lists everything');
    assert.is(gets, 0);

    await put(store, 't/3', { i: 3, n: 2 });
    await put(store, 't/30', { i: 30 });
    const second = (await reader.read())!;
    assert.is(lists, 1, 'no list after the first');
    assert.is(gets, 2, 'the two changed objects');
    assert.is(fullReads, 1, 'what changed since, not every ETag, after the first read');
    assert.equal([...second.changed].sort(), ['t/3', 't/30']);

    await put(store, 't/4', { i: 4, n: 2 });
    interfere = () => put(store, 't/4', { i: 4, n: 3 });
    const third = (await reader.read())!;
    assert.equal(third.values.get('t/4'), { i: 4, n: 3 }, 'the value of the revision it reports');
    assert.is(third.revision, await store.revision());
    assert.equal([...third.values], (await listed(store)).values);
    assert.is(fullReads, 1);

    await store.commit([{ op: 'delete', key: 't/5' }]);
    const full = (await reader.read({ full: true }))!;
    assert.is(fullReads, 2, 'a full read compares every ETag');
    assert.equal([...full.changed], ['t/5']);
    assert.equal([...full.values], (await listed(store)).values);
  });

  test('a store that cannot tell what changed since (too far behind, another history): every ETag is read', async ({
    store,
  }) => {
    for (let i = 0; i < 5; i++) await put(store, `t/${i}`, { i });
    let fullReads = 0;
    let forget = false;
    const counting: Store = {
      ...store,
      etags: (prefix) => {
        fullReads++;
        return store.etags(prefix);
      },
      etagsSince: async (at) => (forget ? undefined : store.etagsSince(at)),
    };
    const reader = snapshotReader(counting);
    await reader.read();
    await put(store, 't/1', { i: 1, n: 2 });
    await store.commit([{ op: 'delete', key: 't/2' }]);
    forget = true;
    const next = (await reader.read())!;
    assert.is(fullReads, 2);
    assert.equal([...next.changed].sort(), ['t/1', 't/2']);
    assert.equal([...next.values], (await listed(store)).values);
  });

  test.run();
});
