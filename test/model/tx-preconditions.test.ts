/**
 * Preconditions on objects a transaction does not change (an x-etag or a JSON Patch `test`
 * beside a write elsewhere) must still hold when the transaction commits, not only when it
 * read. Shown deterministically with two transactions interleaved through the real store
 * (embedded, and Redis DB 15): T1 = {a1 has etag E1 (unchanged), write a2}, T2 = {a2 has
 * etag E2 (unchanged), write a1}. Both read before either commits; T2 commits first. The
 * only serial outcomes are "T2 commits, T1 gets 412" or the reverse — never both committed
 * (write skew), which is what an expectation on the written objects alone allows.
 * Likewise a secret created while its vault is deleted must fail, not be stored orphaned.
 */

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ApiError } from '../../src/lib/errors.js';
import { runTransaction, type Change, type TxContext } from '../../src/model/transaction.js';
import { Strongbox } from '../../src/secrets/strongbox.js';
import type { Store } from '../../src/store/store.js';
import { rejects } from '../helpers/assert.js';
import { forEachBackend, openTestStore } from '../helpers/backends.js';

const TENANT = 'default';
const key = (name: string) => `${TENANT}/applications/${name}`;

/** The same store, except that its first commit() first runs `before` to completion. */
function interleaved(store: Store, before: () => Promise<void>): Store {
  let first = true;
  return Object.assign(Object.create(store) as Store, {
    async commit(ops: Parameters<Store['commit']>[0]) {
      if (first) {
        first = false;
        await before();
      }
      return store.commit(ops);
    },
  });
}

const ctxOf = (store: Store): TxContext => ({ store, strongbox: new Strongbox(store), tenant: TENANT });

async function seed(store: Store): Promise<{ e1: string; e2: string }> {
  const r = await runTransaction(ctxOf(store), [
    { path: 'applications/a1', op: 'replace', value: { version: '1' } },
    { path: 'applications/a2', op: 'replace', value: { version: '1' } },
  ]);
  return { e1: r.etags['applications/a1'] as string, e2: r.etags['applications/a2'] as string };
}

const is412 = (err: unknown) =>
  err instanceof ApiError && err.status === 412 && err.info?.['x-path'] === '/v1/config/applications/a1';
const isTestFailed = (err: unknown) =>
  err instanceof ApiError && err.status === 400 && err.info?.code === 'test-failed';

forEachBackend((name) => {
  test(`${name}: x-etag on an unchanged object is checked at commit (no write skew)`, async () => {
    const store = await openTestStore(name, { db: 15 });
    try {
      const { e1, e2 } = await seed(store);
      const t1: Change[] = [
        { path: 'applications/a1', op: 'update', value: {}, ifMatch: e1 },
        { path: 'applications/a2', op: 'update', value: { version: 'by-t1' } },
      ];
      const t2: Change[] = [
        { path: 'applications/a2', op: 'update', value: {}, ifMatch: e2 },
        { path: 'applications/a1', op: 'update', value: { version: 'by-t2' } },
      ];
      const run2 = async () => {
        await runTransaction(ctxOf(store), t2);
      };
      await rejects(
        () => runTransaction(ctxOf(interleaved(store, run2)), t1),
        is412,
        'T1 must fail: a1 changed before it committed',
      );
      assert.equal((await store.get(key('a1')))?.value, { name: 'a1', version: 'by-t2' });
      assert.equal((await store.get(key('a2')))?.value, { name: 'a2', version: '1' }, 'T1 wrote nothing');
    } finally {
      await store.close();
    }
  });

  test(`${name}: a JSON Patch test on an unchanged object is checked at commit`, async () => {
    const store = await openTestStore(name, { db: 15 });
    try {
      await seed(store);
      const t1: Change[] = [
        { path: 'applications/a1', op: 'update', jsonPatch: [{ op: 'test', path: '/version', value: '1' }] },
        { path: 'applications/a2', op: 'update', value: { version: 'by-t1' } },
      ];
      const t2: Change[] = [{ path: 'applications/a1', op: 'update', value: { version: 'by-t2' } }];
      const run2 = async () => {
        await runTransaction(ctxOf(store), t2);
      };
      await rejects(
        () => runTransaction(ctxOf(interleaved(store, run2)), t1),
        isTestFailed,
        'T1 re-runs and its test fails',
      );
      assert.equal((await store.get(key('a2')))?.value, { name: 'a2', version: '1' });
    } finally {
      await store.close();
    }
  });

  test(`${name}: a secret written while its vault is deleted is refused, never left without a vault`, async () => {
    const store = await openTestStore(name, { db: 15 });
    try {
      const box = new Strongbox(store);
      await box.init();
      const ctx = (s: Store): TxContext => ({ store: s, strongbox: box, tenant: TENANT });
      await runTransaction(ctx(store), [{ path: 'strongbox/vaults/v1', op: 'create', value: {} }]);
      const dropVault = async () => {
        await runTransaction(ctx(store), [{ path: 'strongbox/vaults/v1', op: 'delete' }]);
      };
      const missingParent = (err: unknown) => err instanceof ApiError && err.info?.code === 'missing-parent';
      await rejects(
        () =>
          runTransaction(ctx(interleaved(store, dropVault)), [
            { path: 'strongbox/vaults/v1/secrets/s1', op: 'create', value: { data: { k: 'v' } } },
          ]),
        missingParent,
      );
      assert.equal(await store.list(`${TENANT}/strongbox`), []);
    } finally {
      await store.close();
    }
  });

  test(`${name}: an unchanged precondition that still holds lets the transaction commit, ETag kept`, async () => {
    const store = await openTestStore(name, { db: 15 });
    try {
      const { e1 } = await seed(store);
      const r = await runTransaction(ctxOf(store), [
        { path: 'applications/a1', op: 'update', value: {}, ifMatch: e1 },
        { path: 'applications/a2', op: 'update', value: { version: '2' } },
      ]);
      assert.is(r.etags['applications/a1'], e1);
      assert.is((await store.get(key('a1')))?.etag, e1);
      assert.equal((await store.get(key('a2')))?.value, { name: 'a2', version: '2' });
    } finally {
      await store.close();
    }
  });
});

test.run();
