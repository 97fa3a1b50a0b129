/**
 * The one way a test runs against both store backends: `forEachBackend((backend) => …)` defines
 * its suite once for the embedded store and once for Redis. `openTestStore` and `openTestBus`
 * open a fresh store or bus of a backend (embedded: a new temporary directory, removed when the
 * process exits; Redis: a database of the runner's redis-server, emptied first). `startApi`
 * (./api.ts) takes the same `Backend`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Bus } from '../../src/bus/bus.js';
import { openEmbeddedBus } from '../../src/bus/embedded-bus.js';
import { openRedisBus } from '../../src/bus/redis-bus.js';
import { openEmbeddedStore } from '../../src/store/embedded.js';
import { openRedisStore } from '../../src/store/redis.js';
import type { Store } from '../../src/store/store.js';
import { freshRedisDb } from './redis.js';

export type Backend = 'embedded' | 'redis';

export const BACKENDS: readonly Backend[] = ['embedded', 'redis'];

/** Calls `define` once per backend, embedded first: each call defines (and runs) that backend's suite. */
export function forEachBackend(define: (backend: Backend) => void): void {
  for (const backend of BACKENDS) define(backend);
}

const dirs: string[] = [];
process.once('exit', () => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A new temporary directory, removed when the process exits. */
export function tempDir(prefix = 'edgeplane-test-'): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
}

/** A fresh, empty store of `backend` (Redis: database `db`, or the next unused one). */
export async function openTestStore(backend: Backend, opts: { db?: number } = {}): Promise<Store> {
  return backend === 'embedded'
    ? openEmbeddedStore(tempDir('edgeplane-store-'))
    : openRedisStore(await freshRedisDb(opts.db));
}

/** A fresh, empty bus of `backend` (Redis: database `db`, or the next unused one). */
export async function openTestBus(backend: Backend, opts: { db?: number } = {}): Promise<Bus> {
  return backend === 'embedded'
    ? openEmbeddedBus(tempDir('edgeplane-bus-'))
    : openRedisBus(await freshRedisDb(opts.db));
}
