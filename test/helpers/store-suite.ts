/**
 * The behaviour every Store backend must share (in the style of Hono's common.case.test.ts):
 * test/store/store.test.ts runs it against both (helpers/backends.ts).
 */
import type { JsonObject } from '../../src/lib/json.js';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { etagOf } from '../../src/store/etag.js';
import type { Store } from '../../src/store/store.js';
import { eventually } from './wait.js';

async function put(store: Store, key: string, value: JsonObject): Promise<string> {
  const r = await store.commit([{ op: 'put', key, value }]);
  assert.ok(r.ok, `put ${key}`);
  return r.ok ? (r.etags[key] ?? '') : '';
}

export function storeSuite(name: string, fresh: () => Promise<Store>) {
  const test = suite<{ store: Store }>(`store (${name})`);
  test.before.each(async (ctx) => {
    ctx.store = await fresh();
  });
  test.after.each(async (ctx) => {
    await ctx.store.close();
  });

  test('get of a missing key is undefined; put then get returns value and content etag', async ({ store }) => {
    assert.is(await store.get('t/x'), undefined);
    const etag = await put(store, 't/x', { a: 1, b: 'ü' });
    assert.is(etag, etagOf({ a: 1, b: 'ü' }));
    assert.equal(await store.get('t/x'), { key: 't/x', value: { a: 1, b: 'ü' }, etag });
  });

  test('peek: the answer of get from memory, or miss; never a stale value', async ({ store }) => {
    const agrees = async (key: string) => {
      const peeked = store.peek(key);
      if (store.kind === 'embedded') assert.is.not(peeked, 'miss', 'the embedded store always knows');
      if (peeked !== 'miss') assert.equal(peeked, await store.get(key, { fresh: true }));
    };
    await agrees('t/p');
    await put(store, 't/p', { a: 1 });
    await store.get('t/p');
    await agrees('t/p');
    await put(store, 't/p', { a: 2 });
    await agrees('t/p');
    assert.ok(await store.commit([{ op: 'delete', key: 't/p' }]));
    await agrees('t/p');
  });

  test('values are read-only to callers: mutating a result never changes the store', async ({ store }) => {
    await put(store, 't/x', { a: 1, n: { b: 1 } });
    const got = await store.get('t/x');
    // Embedded hands out one frozen value (the change throws); Redis a fresh copy.
    try {
      if (got) {
        got.value.a = 2;
        (got.value.n as unknown as { b: number }).b = 2;
      }
    } catch (err) {
      assert.instance(err, TypeError);
    }
    const [listed] = await store.list('t/x');
    try {
      if (listed) listed.value.a = 3;
    } catch (err) {
      assert.instance(err, TypeError);
    }
    assert.equal((await store.get('t/x'))?.value, { a: 1, n: { b: 1 } });
  });

  test('list: exact key and keys below prefix/, sorted; a/b never returns a/bc', async ({ store }) => {
    for (const k of ['a/bc', 'b', 'a/b/c', 'a', 'a/b', 'a/b/c/d']) await put(store, k, { k });
    const keys = async (p: string) => (await store.list(p)).map((e) => e.key);
    assert.equal(await keys('a/b'), ['a/b', 'a/b/c', 'a/b/c/d']);
    assert.equal(await keys('a'), ['a', 'a/b', 'a/b/c', 'a/b/c/d', 'a/bc']);
    assert.equal(await keys(''), ['a', 'a/b', 'a/b/c', 'a/b/c/d', 'a/bc', 'b']);
    assert.equal(await keys('a/b/c/d/e'), []);
    assert.equal(await keys('zz'), []);
    const [first] = await store.list('b');
    assert.equal(first, { key: 'b', value: { k: 'b' }, etag: etagOf({ k: 'b' }) });
  });

  test('etags: the ETags list(prefix) would give, with the revision they are at', async ({ store }) => {
    const empty = await store.etags('');
    assert.equal([empty.revision, empty.etags], [0, new Map()]);
    for (const k of ['a/bc', 'b', 'a', 'a/b/c']) await put(store, k, { k });
    await store.commit([{ op: 'delete', key: 'b' }]);
    const all = await store.etags('');
    assert.is(all.revision, 5);
    assert.equal(
      [...all.etags].sort(),
      (await store.list('')).map((e) => [e.key, e.etag]),
    );
    assert.equal([...(await store.etags('a/b')).etags.keys()], ['a/b/c'], 'below a/b, not a/bc');
    assert.equal([...(await store.etags('a')).etags.keys()].sort(), ['a', 'a/b/c', 'a/bc']);
    assert.equal((await store.etags('zz')).etags.size, 0);
    await put(store, 'a', { k: 'changed' });
    const after = await store.etags('a');
    assert.is(after.revision, 6);
    assert.is(after.etags.get('a'), etagOf({ k: 'changed' }), 'a new ETag for a changed object');
    assert.is(after.etags.get('a/bc'), all.etags.get('a/bc'), 'the same ETag for an unchanged one');
  });

  test('etagsSince: the ETag now of each key the commits after a read changed (undefined: deleted)', async ({
    store,
  }) => {
    for (const k of ['a', 'b', 'c']) await put(store, k, { k });
    const at = await store.etags('');
    assert.ok(at.mark !== '', 'a revision made by a commit has a mark');
    assert.equal(await store.etagsSince(at), { revision: 3, mark: at.mark, changed: new Map() }, 'nothing since');
    await put(store, 'a', { k: 'a', n: 2 });
    await store.commit([{ op: 'delete', key: 'b' }]);
    await put(store, 'd', { k: 'd' });
    await put(store, 'a', { k: 'a', n: 3 });
    const since = (await store.etagsSince(at))!;
    assert.is(since.revision, 7);
    assert.equal(
      [...since.changed],
      [
        ['a', etagOf({ k: 'a', n: 3 })],
        ['b', undefined],
        ['d', etagOf({ k: 'd' })],
      ],
      'in the order of the commits, each key at the first that changed it',
    );
    assert.is(since.mark, (await store.etags('')).mark, "the newest commit's mark, as etags gives it");
    assert.equal([...(await store.etagsSince(since))!.changed], [], 'read on from where it stood');
    assert.is(await store.etagsSince({ revision: at.revision, mark: 'other' }), undefined, 'another history');
    assert.is(await store.etagsSince({ revision: 99, mark: at.mark }), undefined, 'a revision ahead of the store');
    assert.is(await store.etagsSince({ revision: 0, mark: '' }), undefined, 'before any commit it remembers');
  });

  test('etagsSince: a reader more than 1,000 commits behind is told to read every ETag', async ({ store }) => {
    await put(store, 'x', { n: 0 });
    const at = await store.etags('');
    for (let n = 1; n <= 999; n++) await put(store, 'x', { n });
    assert.equal([...(await store.etagsSince(at))!.changed.keys()], ['x'], '999 commits behind');
    await put(store, 'x', { n: 1000 });
    assert.is(await store.etagsSince(at), undefined, '1,000 commits behind');
  });

  test('expect null creates once, then reports exists', async ({ store }) => {
    assert.ok((await store.commit([{ op: 'put', key: 't/x', value: { n: 1 }, expect: null }])).ok);
    assert.equal(await store.commit([{ op: 'put', key: 't/x', value: { n: 2 }, expect: null }]), {
      ok: false,
      key: 't/x',
      reason: 'exists',
    });
    assert.equal((await store.get('t/x'))?.value, { n: 1 });
  });

  test('expect * and etag: missing / etag-mismatch, then success with the right etag', async ({ store }) => {
    assert.equal(await store.commit([{ op: 'put', key: 't/x', value: { n: 1 }, expect: '*' }]), {
      ok: false,
      key: 't/x',
      reason: 'missing',
    });
    assert.equal(await store.commit([{ op: 'put', key: 't/x', value: { n: 1 }, expect: '"nope"' }]), {
      ok: false,
      key: 't/x',
      reason: 'missing',
    });
    const etag = await put(store, 't/x', { n: 1 });
    assert.equal(await store.commit([{ op: 'put', key: 't/x', value: { n: 2 }, expect: '"nope"' }]), {
      ok: false,
      key: 't/x',
      reason: 'etag-mismatch',
    });
    const r = await store.commit([{ op: 'put', key: 't/x', value: { n: 2 }, expect: etag }]);
    assert.ok(r.ok);
    assert.equal(r.ok && r.etags, { 't/x': etagOf({ n: 2 }) });
  });

  test('a failing expectation in a 3-op commit changes nothing (all or nothing)', async ({ store }) => {
    const ex = await put(store, 't/x', { n: 1 });
    await put(store, 't/y', { n: 1 });
    const rev = await store.revision();
    const r = await store.commit([
      { op: 'put', key: 't/x', value: { n: 2 }, expect: ex },
      { op: 'put', key: 't/z', value: { n: 2 }, expect: null },
      { op: 'delete', key: 't/y', expect: '"wrong"' },
    ]);
    assert.equal(r, { ok: false, key: 't/y', reason: 'etag-mismatch' });
    assert.equal((await store.get('t/x'))?.value, { n: 1 });
    assert.is(await store.get('t/z'), undefined);
    assert.ok(await store.get('t/y'));
    assert.is(await store.revision(), rev);
    assert.equal(
      (await store.list('t')).map((e) => e.key),
      ['t/x', 't/y'],
    );
  });

  test('multi-object commit applies every op and returns the put etags', async ({ store }) => {
    await put(store, 't/old', { n: 0 });
    const r = await store.commit([
      { op: 'put', key: 't/a', value: { n: 1 } },
      { op: 'put', key: 't/b', value: { n: 2 }, expect: null },
      { op: 'delete', key: 't/old', expect: '*' },
    ]);
    assert.ok(r.ok);
    assert.equal(r.ok && r.etags, { 't/a': etagOf({ n: 1 }), 't/b': etagOf({ n: 2 }) });
    assert.equal(
      (await store.list('t')).map((e) => e.key),
      ['t/a', 't/b'],
    );
  });

  test('delete: expectations, then gone from get and list', async ({ store }) => {
    assert.equal(await store.commit([{ op: 'delete', key: 't/x', expect: '*' }]), {
      ok: false,
      key: 't/x',
      reason: 'missing',
    });
    const etag = await put(store, 't/x', { n: 1 });
    assert.equal(await store.commit([{ op: 'delete', key: 't/x', expect: null }]), {
      ok: false,
      key: 't/x',
      reason: 'exists',
    });
    assert.equal(await store.commit([{ op: 'delete', key: 't/x', expect: '"other"' }]), {
      ok: false,
      key: 't/x',
      reason: 'etag-mismatch',
    });
    assert.ok((await store.commit([{ op: 'delete', key: 't/x', expect: etag }])).ok);
    assert.is(await store.get('t/x'), undefined);
    assert.equal(await store.list('t'), []);
  });

  test('revision: +1 per successful commit, unchanged by failures and empty commits', async ({ store }) => {
    const start = await store.revision();
    const r1 = await store.commit([
      { op: 'put', key: 't/x', value: { n: 1 } },
      { op: 'put', key: 't/y', value: { n: 1 } },
    ]);
    assert.equal(r1.ok && r1.revision, start + 1);
    await store.commit([{ op: 'put', key: 't/x', value: { n: 1 }, expect: null }]);
    const r2 = await store.commit([{ op: 'delete', key: 't/y' }]);
    assert.equal(r2.ok && r2.revision, start + 2);
    assert.equal(await store.commit([]), { ok: true, etags: {}, revision: start + 2 });
    assert.is(await store.revision(), start + 2);
  });

  test('onChange delivers changed keys; an unsubscribed listener gets nothing', async ({ store }) => {
    const seen: string[] = [];
    const gone: string[] = [];
    store.onChange((keys) => seen.push(...keys));
    const off = store.onChange((keys) => gone.push(...keys));
    off();
    await store.commit([
      { op: 'put', key: 't/x', value: { n: 1 } },
      { op: 'delete', key: 't/y' },
    ]);
    await store.commit([{ op: 'put', key: 't/z', value: { n: 1 }, expect: '*' }]);
    await store.commit([{ op: 'put', key: 't/w', value: { n: 1 } }]);
    await eventually(() => seen.includes('t/w'), 'change of t/w delivered');
    assert.equal([...new Set(seen)].sort(), ['t/w', 't/x', 't/y'], 'failed commit t/z not delivered');
    assert.equal(gone, []);
  });

  test('kv: set/get/del, values are strings, missing is undefined', async ({ store }) => {
    assert.is(await store.kvGet('k:a'), undefined);
    await store.kvSet('k:a', '{"x":1}');
    assert.is(await store.kvGet('k:a'), '{"x":1}');
    await store.kvSet('k:a', 'two');
    assert.is(await store.kvGet('k:a'), 'two');
    await store.kvDel('k:a');
    await store.kvDel('k:never');
    assert.is(await store.kvGet('k:a'), undefined);
  });

  test('kv: setMany sets every key, without expiry, over what was there', async ({ store }) => {
    await store.kvSet('m/a', 'old', 60_000);
    await store.kvSetMany([
      ['m/a', '1'],
      ['m/b', '2'],
      ['other/c', '3'],
    ]);
    await store.kvSetMany([]);
    assert.equal(await Promise.all(['m/a', 'm/b', 'other/c'].map((k) => store.kvGet(k))), ['1', '2', '3']);
    assert.equal(await store.kvKeys('m/'), ['m/a', 'm/b']);
    // Keys that share a hash tag (one slot, one MSET on Cluster) beside keys of other slots.
    const tagged = Array.from({ length: 50 }, (_, i) => [`t:{same}:${i}`, `v${i}`] as const);
    await store.kvSetMany([...tagged, ['t:loose', 'x'], ['t:{other}:1', 'y']]);
    assert.equal(
      await Promise.all(tagged.map(([k]) => store.kvGet(k))),
      tagged.map(([, v]) => v),
    );
    assert.equal([await store.kvGet('t:loose'), await store.kvGet('t:{other}:1')], ['x', 'y']);
  });

  test('kv: incr creates at by, adds, rejects fractions', async ({ store }) => {
    assert.is(await store.kvIncr('c:1', 1), 1);
    assert.is(await store.kvIncr('c:1', 5), 6);
    assert.is(await store.kvIncr('c:1', -2), 4);
    assert.is(await store.kvGet('c:1'), '4');
    let failed = false;
    await store.kvIncr('c:1', 0.5).catch(() => {
      failed = true;
    });
    assert.ok(failed);
  });

  test('kv: ttl expiry (set and incr), long ttl kept', async ({ store }) => {
    await store.kvSet('t:short', 'v', 20);
    await store.kvIncr('t:count', 3, 20);
    await store.kvSet('t:long', 'v', 600_000);
    await store.kvIncr('t:longcount', 1, 600_000);
    await eventually(
      async () => (await store.kvGet('t:short')) === undefined && (await store.kvGet('t:count')) === undefined,
      'short ttl keys expire',
    );
    assert.equal(await store.kvKeys('t:'), ['t:long', 't:longcount']);
    assert.is(await store.kvIncr('t:longcount', 1, 600_000), 2);
  });

  test('kv: keys by prefix, glob characters taken literally', async ({ store }) => {
    for (const k of ['p:b', 'p:a', 'q:a', 'g*[x]?', 'g*y', 'gz']) await store.kvSet(k, '1');
    assert.equal(await store.kvKeys('p:'), ['p:a', 'p:b']);
    assert.equal(await store.kvKeys('g*'), ['g*[x]?', 'g*y']);
    assert.equal(await store.kvKeys('g*['), ['g*[x]?']);
    assert.equal(await store.kvKeys('none'), []);
  });

  return test;
}
