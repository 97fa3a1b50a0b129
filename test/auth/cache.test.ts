/**
 * Auth caches are cleared by change notifications and, because Redis pub/sub loses them while
 * its connection is down, also expire: a change nobody announced is seen after
 * authCacheMaxAgeMs at the latest. Time is a fake clock, nothing sleeps.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { authCacheMaxAgeMs, createAsyncCache } from '../../src/auth/cache.js';
import { createTenantTree, tenantsPath } from '../../src/auth/tenants.js';
import { configKey } from '../../src/store/keys.js';
import { openEmbeddedStore } from '../../src/store/embedded.js';

test('AsyncCache: a hit until maxAgeMs, then loaded again; clear drops at once', async () => {
  let t = 0;
  let loads = 0;
  const cache = createAsyncCache<number>({ maxAgeMs: 100, now: () => t });
  const load = async () => ++loads;
  assert.is(await cache.get('k', load), 1);
  t = 99;
  assert.is(await cache.get('k', load), 1);
  t = 100;
  assert.is(await cache.get('k', load), 2);
  cache.clear();
  assert.is(await cache.get('k', load), 3);
});

test('AsyncCache: a load that started before a clear is not kept', async () => {
  let release: (v: number) => void = () => {};
  const cache = createAsyncCache<number>({ now: () => 0 });
  const first = cache.get(
    'k',
    () =>
      new Promise<number>((r) => {
        release = r;
      }),
  );
  cache.clear();
  release(1);
  assert.is(await first, 1);
  assert.is(await cache.get('k', async () => 2), 2);
});

test('tenant tree: a tenant added without a notification exists once the walk has expired', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'edgeplane-auth-cache-'));
  const store = await openEmbeddedStore(dir);
  try {
    let t = 1_000;
    const tree = createTenantTree(store, 'default', () => t);
    assert.not.ok(await tree.exists('lab'));
    // Written behind the tree's back: nobody calls tree.invalidate(), as when pub/sub was down.
    const r = await store.commit([
      { op: 'put', key: configKey('default', `${tenantsPath}/lab`), value: { name: 'lab' } },
    ]);
    assert.ok(r.ok);
    assert.not.ok(await tree.exists('lab'), 'still the cached walk');
    t += authCacheMaxAgeMs;
    assert.ok(await tree.exists('lab'));
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
