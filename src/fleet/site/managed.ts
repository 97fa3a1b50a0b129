/**
 * At an edge site: which configuration objects came from the control plane, and the store
 * every other module of the site uses, which refuses to write them (409
 * `managed-by-control-plane`). The sync loop (sync-loop.ts) writes through the inner store.
 *
 * The sync record is one configuration object, `~fleet/sync` = {version, keys}: the last change
 * applied and the keys it manages. It is written in the same commit as the change it records,
 * so a crash can never separate the two. `~fleet` is not a valid tenant name, so no API path
 * reaches it.
 */
import { ApiError } from '../../lib/errors.js';
import { isObject } from '../../lib/json.js';
import { splitKey } from '../../store/keys.js';
import type { Store } from '../../store/store.js';

export const syncRecordKey = '~fleet/sync';

export type SyncRecord = { version: string; keys: string[] };

export function readSyncRecord(value: unknown): SyncRecord | undefined {
  if (!isObject(value) || typeof value.version !== 'string' || !Array.isArray(value.keys)) return undefined;
  return { version: value.version, keys: value.keys.filter((k): k is string => typeof k === 'string') };
}

export class ManagedKeys {
  private keys: ReadonlySet<string> = new Set();
  version: string | undefined;

  has(key: string): boolean {
    return this.keys.has(key) || key === syncRecordKey;
  }

  set(rec: SyncRecord | undefined): void {
    this.keys = new Set(rec?.keys ?? []);
    this.version = rec?.version;
  }

  async load(store: Store): Promise<void> {
    this.set(readSyncRecord((await store.get(syncRecordKey, { fresh: true }))?.value));
  }
}

function refusal(key: string): ApiError {
  const { tenant, path } = splitKey(key);
  return new ApiError(
    'conflict',
    `Cannot change /v1/config/${path}: it is managed by the control plane; change it there`,
    { code: 'managed-by-control-plane', 'x-path': `/v1/config/${path}`, tenant },
  );
}

/** `inner` with commits that touch a synced object refused (every other call passes through). */
export function readOnlySynced(inner: Store, managed: ManagedKeys): Store {
  const unsubscribe = inner.onChange((keys) => {
    // Another process of this site (same Redis) applied a change: reload the managed set.
    if (keys.includes(syncRecordKey)) void managed.load(inner).catch(() => undefined);
  });
  return {
    kind: inner.kind,
    get: (key, opts) => inner.get(key, opts),
    peek: (key) => inner.peek(key),
    list: (prefix) => inner.list(prefix),
    etags: (prefix) => inner.etags(prefix),
    etagsSince: (at) => inner.etagsSince(at),
    commit: (ops, note) => {
      for (const op of ops) if (managed.has(op.key)) return Promise.reject(refusal(op.key));
      return inner.commit(ops, note);
    },
    history: (opts) => inner.history(opts),
    revision: () => inner.revision(),
    onChange: (listener) => inner.onChange(listener),
    kvGet: (key) => inner.kvGet(key),
    kvSet: (key, value, ttlMs, opts) => inner.kvSet(key, value, ttlMs, opts),
    kvSetMany: (entries) => inner.kvSetMany(entries),
    kvDel: (key) => inner.kvDel(key),
    kvIncr: (key, by, ttlMs) => inner.kvIncr(key, by, ttlMs),
    kvKeys: (prefix) => inner.kvKeys(prefix),
    close: () => {
      unsubscribe();
      return inner.close();
    },
  };
}
