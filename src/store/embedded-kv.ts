/**
 * The embedded store's kv area: values with an optional TTL, expired lazily (and swept every
 * 1,000 writes so never-read keys do not pile up). A value without a TTL, or a durable one, is
 * in the file; any other TTL value lives in memory only.
 */
import { ApiError } from '../lib/errors.js';
import { encodeKvDel, encodeKvSet, type AofWriter } from './aof.js';
import type { KvValue } from './embedded-load.js';
import type { Store } from './store.js';

type KvArea = Pick<Store, 'kvGet' | 'kvSet' | 'kvSetMany' | 'kvDel' | 'kvIncr' | 'kvKeys'>;

export function embeddedKv(kv: Map<string, KvValue>, aof: AofWriter, checkOpen: () => void): KvArea {
  let kvWrites = 0;

  function liveKv(key: string, now = Date.now()): KvValue | undefined {
    const v = kv.get(key);
    if (v && v.expiresAt !== undefined && v.expiresAt <= now) {
      kv.delete(key);
      return undefined;
    }
    return v;
  }

  /** Expiry is lazy; this sweep keeps never-read keys (throttle counters) from piling up. */
  function countKvWrite(): void {
    if (++kvWrites % 1000 !== 0) return;
    const now = Date.now();
    for (const k of kv.keys()) liveKv(k, now);
  }

  function putKv(key: string, value: string, ttlMs: number | undefined, durable = false): void {
    const before = kv.get(key);
    const expiresAt = ttlMs === undefined ? undefined : Date.now() + Math.max(1, ttlMs);
    const inFile = ttlMs === undefined || durable;
    if (inFile) aof.append(encodeKvSet(key, value, expiresAt));
    // Any other TTL value lives in memory only: forget a value in the file so a restart cannot revive it.
    else if (before?.inFile) aof.append(encodeKvDel(key));
    kv.set(key, { value, expiresAt, inFile });
    countKvWrite();
  }

  return {
    async kvGet(key) {
      checkOpen();
      return liveKv(key)?.value;
    },

    async kvSet(key, value, ttlMs, opts) {
      checkOpen();
      putKv(key, value, ttlMs, opts?.durable === true);
    },

    async kvSetMany(entries) {
      checkOpen();
      for (const [key, value] of entries) putKv(key, value, undefined, false);
    },

    async kvDel(key) {
      checkOpen();
      const before = kv.get(key);
      if (!before) return;
      if (before.inFile) aof.append(encodeKvDel(key));
      kv.delete(key);
    },

    async kvIncr(key, by, ttlMs) {
      checkOpen();
      if (!Number.isSafeInteger(by)) throw new ApiError('internal', `kvIncr needs a whole number, got ${by}`, { key });
      const cur = liveKv(key);
      if (cur && !Number.isSafeInteger(Number(cur.value)))
        throw new ApiError('internal', `kv ${key} does not hold an integer`, { key });
      const n = (cur ? Number(cur.value) : 0) + by;
      if (!cur) putKv(key, String(n), ttlMs);
      else if (cur.inFile) {
        // Kept as it was kept: in the file, with the expiry it has.
        aof.append(encodeKvSet(key, String(n), cur.expiresAt));
        cur.value = String(n);
      } else cur.value = String(n);
      return n;
    },

    async kvKeys(prefix) {
      checkOpen();
      const now = Date.now();
      const out: string[] = [];
      for (const k of kv.keys()) if (k.startsWith(prefix) && liveKv(k, now)) out.push(k);
      return out.sort();
    },
  };
}
