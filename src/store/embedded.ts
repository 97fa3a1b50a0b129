/**
 * Store in this process: Maps, made durable by the append-only file of aof.ts under the data
 * directory. For a single process (a laptop, unit tests); several processes need Redis.
 *
 * commit() does all its work synchronously, so no other call can interleave with it: that
 * is the whole of its atomicity. Objects are kept as JSON text, parsed once on first read
 * and deep-frozen, so readers share one value and none can change the store through it.
 */
import { join } from 'node:path';
import { ApiError } from '../lib/errors.js';
import { log } from '../lib/log.js';
import { AofWriter, encodeCommit, encodeKvDel, encodeKvSet, ensureDir, replay, rewrite, type EncodeOp } from './aof.js';
import { etagOf } from './etag.js';
import { BoundedMap } from '../lib/bounded-cache.js';
import type { CommitResult, Entry, Store, StoredRevision } from './store.js';
import { decodeNote, defaultHistoryMs, encodeNote } from './history.js';
import type { JsonObject } from '../lib/json.js';
import { deepFreeze } from './freeze.js';
import { errorText } from '../lib/error-text.js';

/** `value` is parsed once, lazily, and deep-frozen: readers share it and cannot change the store through it. */
type StoredObject = { text: string; etag: string; value?: JsonObject };

/** expiresAt undefined: no TTL. inFile: the value is in the file (no TTL, or a durable one). */
type KvValue = { value: string; expiresAt: number | undefined; inFile: boolean };

export type EmbeddedOptions = {
  /** How long revisions of the configuration history are kept (CONFIG_HISTORY). Default 30 days. */
  historyMs?: number;
  /** Compact at open when the file holds at least this many bytes more than the live data. Default 1 MiB. */
  compactMinBytes?: number;
};

export async function openEmbeddedStore(dataDir: string, opts: EmbeddedOptions = {}): Promise<Store> {
  ensureDir(dataDir);
  const path = join(dataDir, 'store.aof');
  const objects = new Map<string, StoredObject>();
  const kv = new Map<string, KvValue>();
  let revision = 0;
  const keepMs = opts.historyMs ?? defaultHistoryMs;
  /** The history, oldest first: each revision with its note's JSON text and time. */
  const history: Array<{ revision: number; text: string; time: number }> = [];
  const dropExpired = (now: number) => {
    let i = 0;
    while (i < history.length && history[i]!.time < now - keepMs) i++;
    if (i > 0) history.splice(0, i);
  };

  const loaded = replay(path);
  const opened = Date.now();
  if (loaded.tornBytes > 0)
    log('warn', 'embedded store: dropped a torn last record', { path, bytes: loaded.tornBytes });
  for (const rec of loaded.records) {
    if ('c' in rec) {
      revision = rec.r;
      if (rec.h)
        history.push({ revision: rec.r, text: JSON.stringify(rec.h), time: Date.parse(String(rec.h.time)) || 0 });
      for (const op of rec.c) {
        if ('v' in op) objects.set(op.k, { text: JSON.stringify(op.v), etag: etagOf(op.v) });
        else objects.delete(op.k);
      }
    } else if ('s' in rec) {
      if (rec.x === undefined || rec.x > opened) kv.set(rec.kv, { value: rec.s, expiresAt: rec.x, inFile: true });
      else kv.delete(rec.kv); // a durable value that expired while the store was closed
    } else kv.delete(rec.kv);
  }

  dropExpired(opened);
  const snapshot = function* (): Generator<string> {
    // The retained history first (commits without ops: replay moves the revision up to the last line).
    for (const h of history) yield encodeCommit(h.revision, [], h.text);
    yield encodeCommit(revision, []);
    for (const [k, o] of objects) yield encodeCommit(revision, [{ k, text: o.text }]);
    const now = Date.now();
    for (const [k, v] of kv)
      if (v.inFile && (v.expiresAt === undefined || v.expiresAt > now)) yield encodeKvSet(k, v.value, v.expiresAt);
  };
  let live = 0;
  for (const line of snapshot()) live += Buffer.byteLength(line) + 1;
  if (loaded.bytes - live >= (opts.compactMinBytes ?? 1 << 20) && loaded.bytes > 2 * live) {
    const bytes = rewrite(path, snapshot());
    log('info', 'embedded store: compacted its file', { path, before: loaded.bytes, after: bytes });
  }

  const aof = new AofWriter(path);
  const listeners = new Set<(keys: string[]) => void>();
  let pending = new Set<string>();
  let closed = false;
  let kvWrites = 0;

  function checkOpen(): void {
    if (closed) throw new ApiError('unavailable', 'The embedded store is closed');
  }

  function flushChanges(): void {
    const keys = [...pending];
    pending = new Set();
    for (const l of listeners) {
      try {
        l(keys);
      } catch (err) {
        log('error', 'store change listener failed', { error: errorText(err) });
      }
    }
  }

  function changed(keys: string[]): void {
    if (listeners.size === 0) return;
    const schedule = pending.size === 0;
    for (const k of keys) pending.add(k);
    // One delivery per turn of the event loop, batching the commits made in it.
    if (schedule) setImmediate(flushChanges);
  }

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

  /** The last list read of each prefix, at the revision it was read. */
  const lists = new BoundedMap<string, { revision: number; entries: Entry[] }>(64);

  function parse(key: string, o: StoredObject): Entry {
    o.value ??= deepFreeze(JSON.parse(o.text) as JsonObject);
    return { key, value: o.value, etag: o.etag };
  }

  const peek = (key: string): Entry | undefined => {
    checkOpen();
    const o = objects.get(key);
    return o && parse(key, o);
  };

  return {
    kind: 'embedded',
    peek,

    async get(key) {
      return peek(key);
    },

    async list(prefix) {
      checkOpen();
      // The same frozen array until the next commit: a list read again is not rebuilt (nor re-sorted).
      const hit = lists.get(prefix);
      if (hit?.revision === revision) return hit.entries;
      const below = prefix + '/';
      const out: Entry[] = [];
      for (const [k, o] of objects) if (prefix === '' || k === prefix || k.startsWith(below)) out.push(parse(k, o));
      const entries = Object.freeze(out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))) as Entry[];
      lists.set(prefix, { revision, entries });
      return entries;
    },

    async etags(prefix) {
      checkOpen();
      const below = prefix + '/';
      const etags = new Map<string, string>();
      for (const [k, o] of objects) if (prefix === '' || k === prefix || k.startsWith(below)) etags.set(k, o.etag);
      return { revision, etags };
    },

    async commit(ops, note): Promise<CommitResult> {
      checkOpen();
      if (ops.length === 0) return { ok: true, etags: {}, revision };
      for (const op of ops) {
        const e = op.expect;
        if (e === undefined) continue;
        const cur = objects.get(op.key);
        if (e === null && cur) return { ok: false, key: op.key, reason: 'exists' };
        if (e !== null && !cur) return { ok: false, key: op.key, reason: 'missing' };
        if (e !== null && e !== '*' && cur && cur.etag !== e)
          return { ok: false, key: op.key, reason: 'etag-mismatch' };
      }
      // Serialise everything before touching state, so a value that cannot be stored fails the whole commit.
      const encoded: EncodeOp[] = [];
      const etags: Record<string, string> = {};
      for (const op of ops) {
        if (op.op === 'put') {
          encoded.push({ k: op.key, text: JSON.stringify(op.value) });
          etags[op.key] = etagOf(op.value);
        } else {
          encoded.push({ k: op.key, d: 1 });
          delete etags[op.key];
        }
      }
      // CONFIG_HISTORY=0: no history is kept.
      const noteText = note && keepMs > 0 ? encodeNote(note) : undefined;
      aof.append(encodeCommit(revision + 1, encoded, noteText));
      revision++;
      if (noteText !== undefined) {
        const now = Date.now();
        history.push({ revision, text: noteText, time: Date.parse(note!.time) || now });
        if (history.length % 256 === 0) dropExpired(now);
      }
      for (const op of encoded) {
        const etag = etags[op.k];
        if ('text' in op && etag) objects.set(op.k, { text: op.text, etag });
        else objects.delete(op.k);
      }
      changed(encoded.map((op) => op.k));
      return { ok: true, etags, revision };
    },

    async revision() {
      checkOpen();
      return revision;
    },

    async history({ upTo, limit }) {
      checkOpen();
      const cut = Date.now() - keepMs;
      const out: StoredRevision[] = [];
      for (let i = history.length - 1; i >= 0 && out.length < limit; i--) {
        const h = history[i]!;
        if (h.time < cut) break;
        if (upTo !== undefined && h.revision > upTo) continue;
        const rev = decodeNote(h.revision, h.text);
        if (rev) out.push(rev);
      }
      return out;
    },

    onChange(listener) {
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
      };
    },

    async kvGet(key) {
      checkOpen();
      return liveKv(key)?.value;
    },

    async kvSet(key, value, ttlMs, opts) {
      checkOpen();
      putKv(key, value, ttlMs, opts?.durable === true);
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

    async close() {
      if (closed) return;
      closed = true;
      listeners.clear();
      aof.close();
    },
  };
}
