/**
 * The one way a test runs against both store backends: `forEachBackend((backend) => …)` defines
 * its suite once for the embedded store and once for Redis. `openTestStore` and `openTestBus`
 * open a fresh store or bus of a backend (embedded: a new temporary directory, removed when the
 * process exits; Redis: a database of the runner's redis-server, emptied first). `startApi`
 * (./api.ts) takes the same `Backend`.
 *
 * `forEachDeployment` adds the Redis deployments beyond one server (CONTRACT §10) for the shared
 * store, bus and fleet-log suites only: 'sentinel' (a primary, a replica, three sentinels:
 * ./redis-deployments.ts) and 'cluster' (three primaries, three replicas), each started once per
 * test process on first use and emptied (FLUSHALL on the primaries) before each store or bus it
 * opens.
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
import type { RedisTarget } from '../../src/lib/redis.js';
import { freshRedisDb } from './redis.js';
import {
  ask,
  startRedisCluster,
  startSentinelSet,
  type RedisClusterSet,
  type SentinelSet,
} from './redis-deployments.js';

export type Backend = 'embedded' | 'redis';

export const BACKENDS: readonly Backend[] = ['embedded', 'redis'];

/** Calls `define` once per backend, embedded first: each call defines (and runs) that backend's suite. */
export function forEachBackend(define: (backend: Backend) => void): void {
  for (const backend of BACKENDS) define(backend);
}

/** The store backends plus the Redis deployments beyond one server. */
export type Deployment = Backend | 'sentinel' | 'cluster';

export const DEPLOYMENTS: readonly Deployment[] = ['embedded', 'redis', 'sentinel', 'cluster'];

/** Like forEachBackend, over every deployment: the shared store, bus and fleet-log suites. */
export function forEachDeployment(define: (deployment: Deployment) => void): void {
  for (const d of DEPLOYMENTS) define(d);
}

let sentinels: Promise<SentinelSet> | undefined;

/** This process's Sentinel set (started on first use; killed at exit). */
export function testSentinelSet(): Promise<SentinelSet> {
  sentinels ??= startSentinelSet();
  return sentinels;
}

let cluster: Promise<RedisClusterSet> | undefined;

/** This process's Redis Cluster (started on first use; killed at exit). */
export function testCluster(): Promise<RedisClusterSet> {
  cluster ??= startRedisCluster();
  return cluster;
}

/** The target of `deployment` (a Redis one), emptied first (Cluster: database 0 only, `db` ignored). */
export async function freshTarget(deployment: Exclude<Deployment, 'embedded'>, db?: number): Promise<RedisTarget> {
  if (deployment === 'redis') return { kind: 'standalone', url: await freshRedisDb(db) };
  if (deployment === 'cluster') {
    const c = await testCluster();
    await c.flush();
    return { kind: 'cluster', nodes: c.nodes };
  }
  const set = await testSentinelSet();
  await ask(await set.primaryPort(), ['FLUSHALL']);
  return { kind: 'sentinel', sentinels: set.sentinels, master: set.master };
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
export async function openTestStore(backend: Deployment, opts: { db?: number } = {}): Promise<Store> {
  return backend === 'embedded'
    ? openEmbeddedStore(tempDir('edgeplane-store-'))
    : openRedisStore(await freshTarget(backend, opts.db));
}

/** A fresh, empty bus of `backend` (Redis: database `db`, or the next unused one). */
export async function openTestBus(backend: Deployment, opts: { db?: number } = {}): Promise<Bus> {
  return backend === 'embedded'
    ? openEmbeddedBus(tempDir('edgeplane-bus-'))
    : openRedisBus(await freshTarget(backend, opts.db));
}
