/**
 * The configuration history at the store level, on both backends: a commit with a note is a
 * revision (newest first, `upTo` pages back), a commit without one is not, a failed commit
 * writes none, revisions older than the retention are not read, and CONFIG_HISTORY=0 keeps
 * none. The embedded store keeps its history across a reopen and a compaction.
 */
import { suite, test } from 'uvu';
import * as assert from 'uvu/assert';
import { forEachBackend, tempDir } from '../helpers/backends.js';
import { freshRedisDb } from '../helpers/redis.js';
import { openEmbeddedStore } from '../../src/store/embedded.js';
import { openRedisStore } from '../../src/store/redis.js';
import type { RevisionNote, Store } from '../../src/store/store.js';
import { encodeNote } from '../../src/store/history.js';

const note = (user: string, key: string, ageMs = 0): RevisionNote => ({
  time: new Date(Date.now() - ageMs).toISOString(),
  user,
  tenant: 'default',
  changes: [{ key, after: { name: key } }],
});

forEachBackend((backend) => {
  const t = suite(`configuration history (${backend})`);
  const open = async (historyMs?: number): Promise<Store> => {
    const opts = historyMs !== undefined ? { historyMs } : {};
    return backend === 'embedded'
      ? openEmbeddedStore(tempDir('edgeplane-history-'), opts)
      : openRedisStore(await freshRedisDb(), opts);
  };

  t('a commit with a note is a revision; newest first; upTo pages back; failed commits write none', async () => {
    const store = await open();
    try {
      const r1 = await store.commit(
        [{ op: 'put', key: 'default/a', value: { name: 'a' } }],
        note('alice', 'default/a'),
      );
      const r2 = await store.commit([{ op: 'put', key: 'default/x', value: { name: 'x' } }]);
      const r3 = await store.commit(
        [{ op: 'put', key: 'default/b', value: { name: 'b' }, expect: null }],
        note('bob', 'default/b'),
      );
      const failed = await store.commit(
        [{ op: 'put', key: 'default/b', value: { name: 'b2' }, expect: null }],
        note('carol', 'default/b'),
      );
      assert.ok(r1.ok && r2.ok && r3.ok && !failed.ok);
      const all = await store.history({ limit: 10 });
      assert.equal(
        all.map((r) => [r.revision, r.user]),
        [
          [r3.ok ? r3.revision : 0, 'bob'],
          [r1.ok ? r1.revision : 0, 'alice'],
        ],
      );
      assert.equal(all[1]?.changes, [{ key: 'default/a', after: { name: 'default/a' } }]);
      const older = await store.history({ upTo: r3.ok ? r3.revision - 1 : 0, limit: 10 });
      assert.equal(
        older.map((r) => r.user),
        ['alice'],
      );
      assert.is((await store.history({ limit: 1 })).length, 1);
    } finally {
      await store.close();
    }
  });

  t('retention: revisions older than it are not read; 0 keeps no history', async () => {
    const store = await open(60_000);
    try {
      await store.commit(
        [{ op: 'put', key: 'default/old', value: { name: 'old' } }],
        note('old', 'default/old', 120_000),
      );
      await store.commit([{ op: 'put', key: 'default/new', value: { name: 'new' } }], note('new', 'default/new'));
      assert.equal(
        (await store.history({ limit: 10 })).map((r) => r.user),
        ['new'],
      );
    } finally {
      await store.close();
    }
    const none = await open(0);
    try {
      const r = await none.commit([{ op: 'put', key: 'default/a', value: { name: 'a' } }], note('x', 'default/a'));
      assert.ok(r.ok);
      assert.equal(await none.history({ limit: 10 }), []);
    } finally {
      await none.close();
    }
  });

  t.run();
});

test('embedded: the history survives a reopen and a compaction', async () => {
  const dir = tempDir('edgeplane-history-reopen-');
  let store = await openEmbeddedStore(dir);
  for (let i = 0; i < 50; i++)
    await store.commit(
      [{ op: 'put', key: 'default/a', value: { name: 'a', n: i, pad: 'x'.repeat(200) } }],
      note(`u${i}`, 'default/a'),
    );
  await store.close();
  // A tiny compaction threshold: the reopen rewrites the file from a snapshot.
  store = await openEmbeddedStore(dir, { compactMinBytes: 1 });
  try {
    const h = await store.history({ limit: 100 });
    assert.is(h.length, 50);
    assert.is(h[0]?.user, 'u49');
    assert.is(await store.revision(), 50, 'the revision counter is where it was');
    assert.equal((await store.get('default/a'))?.value.n, 49);
  } finally {
    await store.close();
  }
  store = await openEmbeddedStore(dir);
  try {
    assert.is((await store.history({ limit: 100 })).length, 50, 'and after the compacted file is read again');
    assert.is(await store.revision(), 50);
  } finally {
    await store.close();
  }
});

test('embedded: a note whose before is the stored object (as read) keeps it as it was', async () => {
  const store = await openEmbeddedStore(tempDir('edgeplane-history-before-'));
  try {
    await store.commit([{ op: 'put', key: 'default/a', value: { name: 'a', labels: { z: '1', a: 'é"' }, n: 1.5 } }]);
    const read = (await store.get('default/a'))?.value;
    assert.ok(read);
    const after = { name: 'a', n: 2 };
    const n: RevisionNote = { ...note('u', 'default/a'), changes: [{ key: 'default/a', before: read, after }] };
    await store.commit([{ op: 'put', key: 'default/a', value: after }], n);
    const [rev] = await store.history({ limit: 1 });
    assert.equal(rev?.changes, [
      { key: 'default/a', before: { name: 'a', labels: { z: '1', a: 'é"' }, n: 1.5 }, after },
    ]);
    assert.equal(Object.keys(rev?.changes[0]?.before?.labels as object), ['z', 'a']);
  } finally {
    await store.close();
  }
});

test('a note encoded with the texts its commit made is the same JSON text as without them', () => {
  const after = { name: 'a', labels: { b: 'é"\n', a: [1, { z: null }] } };
  const before = { name: 'a', version: '1' };
  const n: RevisionNote = {
    time: '2026-11-28T03:00:00.000Z',
    user: 'admin@"x"',
    tenant: 'default',
    changes: [
      { key: 'default/x/a', before, after },
      { key: 'default/x/b', after: before },
      { key: 'default/x/c', before },
    ],
  };
  const texts = new Map<object, string>([[after, JSON.stringify(after)]]);
  assert.is(
    encodeNote(n, (v) => texts.get(v)),
    JSON.stringify(n),
  );
  assert.is(
    encodeNote({ ...n, changes: [] }, () => undefined),
    JSON.stringify({ ...n, changes: [] }),
  );
});

test.run();
