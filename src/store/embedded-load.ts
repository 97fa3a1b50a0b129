/**
 * The embedded store's state as its file left it: `store.aof` replayed (objects, the kv area,
 * the retained configuration history, the revision), then compacted when the file holds much
 * more than the live data.
 */
import { log } from '../lib/log.js';
import type { JsonObject } from '../lib/json.js';
import { encodeCommit, encodeKvSet, replay, rewrite } from './aof.js';
import { etagOf } from './etag.js';

/** `value` is parsed once, lazily, and deep-frozen: readers share it and cannot change the store through it. */
export type StoredObject = { text: string; etag: string; value?: JsonObject };

/** expiresAt undefined: no TTL. inFile: the value is in the file (no TTL, or a durable one). */
export type KvValue = { value: string; expiresAt: number | undefined; inFile: boolean };

/** One revision of the history: its note's JSON text and time. */
export type HistoryEntry = { revision: number; text: string; time: number };

export type EmbeddedState = {
  objects: Map<string, StoredObject>;
  kv: Map<string, KvValue>;
  /** The history, oldest first. */
  history: HistoryEntry[];
  revision: number;
};

/** Drops the revisions older than `keepMs` from the front of the history. */
export function dropExpired(history: HistoryEntry[], keepMs: number, now: number): void {
  let i = 0;
  while (i < history.length && history[i]!.time < now - keepMs) i++;
  if (i > 0) history.splice(0, i);
}

/** Replays `path` (a missing file is an empty store), then compacts it when worth it. */
export function loadState(path: string, keepMs: number, compactMinBytes = 1 << 20): EmbeddedState {
  const state: EmbeddedState = { objects: new Map(), kv: new Map(), history: [], revision: 0 };
  const loaded = replay(path);
  const opened = Date.now();
  if (loaded.tornBytes > 0)
    log('warn', 'embedded store: dropped a torn last record', { path, bytes: loaded.tornBytes });
  for (const rec of loaded.records) {
    if ('c' in rec) {
      state.revision = rec.r;
      if (rec.h)
        state.history.push({ revision: rec.r, text: JSON.stringify(rec.h), time: Date.parse(String(rec.h.time)) || 0 });
      for (const op of rec.c) {
        if ('v' in op) state.objects.set(op.k, { text: JSON.stringify(op.v), etag: etagOf(op.v) });
        else state.objects.delete(op.k);
      }
    } else if ('s' in rec) {
      if (rec.x === undefined || rec.x > opened) state.kv.set(rec.kv, { value: rec.s, expiresAt: rec.x, inFile: true });
      else state.kv.delete(rec.kv); // a durable value that expired while the store was closed
    } else state.kv.delete(rec.kv);
  }
  dropExpired(state.history, keepMs, opened);

  let live = 0;
  for (const line of snapshot(state)) live += Buffer.byteLength(line) + 1;
  if (loaded.bytes - live >= compactMinBytes && loaded.bytes > 2 * live) {
    const bytes = rewrite(path, snapshot(state));
    log('info', 'embedded store: compacted its file', { path, before: loaded.bytes, after: bytes });
  }
  return state;
}

/** The live state as the lines of a fresh file. */
function* snapshot(state: EmbeddedState): Generator<string> {
  // The retained history first (commits without ops: replay moves the revision up to the last line).
  for (const h of state.history) yield encodeCommit(h.revision, [], h.text);
  yield encodeCommit(state.revision, []);
  for (const [k, o] of state.objects) yield encodeCommit(state.revision, [{ k, text: o.text }]);
  const now = Date.now();
  for (const [k, v] of state.kv)
    if (v.inFile && (v.expiresAt === undefined || v.expiresAt > now)) yield encodeKvSet(k, v.value, v.expiresAt);
}
