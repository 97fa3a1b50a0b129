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
import { AofWriter, encodeCommit, ensureDir, type EncodeOp } from './aof.js';
import { etagOf } from './etag.js';
import { BoundedMap } from '../lib/bounded-cache.js';
import type { CommitResult, Entry, EtagsAt, EtagsSince, RevisionNote, Store, StoredRevision } from './store.js';
import { randomBytes } from 'node:crypto';
import { decodeNote, defaultHistoryMs, encodeNote } from './history.js';
import { dropExpired, loadState, type EmbeddedState, type StoredObject } from './embedded-load.js';
import { embeddedKv } from './embedded-kv.js';
import type { JsonObject } from '../lib/json.js';
import { deepFreeze } from './freeze.js';
import { errorText } from '../lib/error-text.js';

export type EmbeddedOptions = {
  /** How long revisions of the configuration history are kept (CONFIG_HISTORY). Default 30 days. */
  historyMs?: number;
  /** Compact at open when the file holds at least this many bytes more than the live data. Default 1 MiB. */
  compactMinBytes?: number;
};

export async function openEmbeddedStore(dataDir: string, opts: EmbeddedOptions = {}): Promise<Store> {
  ensureDir(dataDir);
  const path = join(dataDir, 'store.aof');
  const keepMs = opts.historyMs ?? defaultHistoryMs;
  const state = loadState(path, keepMs, opts.compactMinBytes);
  const aof = new AofWriter(path);
  const feed = changeFeed();
  let closed = false;
  const checkOpen = (): void => {
    if (closed) throw new ApiError('unavailable', 'The embedded store is closed');
  };
  return {
    kind: 'embedded',
    ...configOps(state, { aof, keepMs, checkOpen, changed: feed.changed }),
    onChange: feed.onChange,
    ...embeddedKv(state.kv, aof, checkOpen),
    async close() {
      if (closed) return;
      closed = true;
      feed.clear();
      aof.close();
    },
  };
}

/** Change notifications: one delivery per turn of the event loop, batching the commits made in it. */
function changeFeed() {
  const listeners = new Set<(keys: string[]) => void>();
  let pending = new Set<string>();

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

  return {
    changed(keys: string[]): void {
      if (listeners.size === 0) return;
      const schedule = pending.size === 0;
      for (const k of keys) pending.add(k);
      if (schedule) setImmediate(flushChanges);
    },
    onChange(listener: (keys: string[]) => void): () => void {
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
      };
    },
    clear: () => listeners.clear(),
  };
}

type ConfigDeps = { aof: AofWriter; keepMs: number; checkOpen: () => void; changed: (keys: string[]) => void };

/** Commits whose keys etagsSince remembers: a reader further behind reads every ETag. */
const recentKept = 1000;

/**
 * The keys of this process's last commits, for etagsSince. The mark is the store's own (one
 * history per open store: a reader in this process cannot have read another).
 */
class RecentCommits {
  readonly mark = randomBytes(6).toString('base64url');
  private readonly keys: string[][] = [];
  /** The revision of keys[0]. */
  private first = 0;
  add(revision: number, keys: string[]): void {
    if (this.keys.length === 0) this.first = revision;
    this.keys.push(keys);
    if (this.keys.length > recentKept) {
      this.keys.shift();
      this.first++;
    }
  }
  /** Each key changed after `at` with its ETag now, or undefined when the commits after `at` are not all here. */
  since(at: EtagsAt, revision: number, objects: EmbeddedState['objects']): EtagsSince | undefined {
    if (at.mark !== this.mark || at.revision > revision || revision - at.revision >= recentKept) return undefined;
    if (at.revision < revision && at.revision < this.first - 1) return undefined;
    const changed = new Map<string, string | undefined>();
    for (let i = Math.max(0, at.revision + 1 - this.first); i < this.keys.length; i++)
      for (const k of this.keys[i]!) changed.set(k, objects.get(k)?.etag);
    return { revision, mark: this.mark, changed };
  }
}

/** Whether a key is `prefix` or below it ('' holds every key). */
const below = (prefix: string) => {
  const inside = prefix + '/';
  return (k: string) => prefix === '' || k === prefix || k.startsWith(inside);
};

function parse(key: string, o: StoredObject): Entry {
  o.value ??= deepFreeze(JSON.parse(o.text) as JsonObject);
  return { key, value: o.value, etag: o.etag };
}

/** The configuration objects: reads, the atomic commit, the revision and its history. */
function configOps(
  state: EmbeddedState,
  { aof, keepMs, checkOpen, changed }: ConfigDeps,
): Pick<Store, 'peek' | 'get' | 'list' | 'etags' | 'etagsSince' | 'commit' | 'revision' | 'history'> {
  const { objects, history } = state;
  const recent = new RecentCommits();
  const peek = (key: string): Entry | undefined => {
    checkOpen();
    const o = objects.get(key);
    return o && parse(key, o);
  };
  /** The last list read of each prefix, kept until a commit changes a key under it (dropLists). */
  const lists = new BoundedMap<string, Entry[]>(64);
  const dropLists = (keys: readonly string[]): void => {
    if (lists.size === 0) return;
    for (const prefix of lists.keys()) if (keys.some(below(prefix))) lists.delete(prefix);
  };

  return {
    peek,

    async get(key) {
      return peek(key);
    },

    async list(prefix) {
      checkOpen();
      // The same frozen array until a commit changes a key under the prefix: a list read again
      // is not rebuilt (nor re-sorted), and commits elsewhere (every PUT of another resource)
      // leave it be.
      const hit = lists.get(prefix);
      if (hit) return hit;
      const inside = below(prefix);
      const out: Entry[] = [];
      for (const [k, o] of objects) if (inside(k)) out.push(parse(k, o));
      const entries = Object.freeze(out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))) as Entry[];
      lists.set(prefix, entries);
      return entries;
    },

    async etags(prefix) {
      checkOpen();
      const inside = below(prefix);
      const etags = new Map<string, string>();
      for (const [k, o] of objects) if (inside(k)) etags.set(k, o.etag);
      return { revision: state.revision, mark: recent.mark, etags };
    },

    async etagsSince(at) {
      checkOpen();
      return recent.since(at, state.revision, objects);
    },

    commit: atomicCommit(state, { aof, keepMs, checkOpen, changed }, (revision, keys) => {
      dropLists(keys);
      recent.add(revision, keys);
    }),

    async revision() {
      checkOpen();
      return state.revision;
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
  };
}

/**
 * The JSON text of a value of the note, when one is at hand: a stored value's (made by the
 * commit), or a `before` that is the object as stored now (read from the store: its text).
 */
function noteTexts(
  texts: ReadonlyMap<JsonObject, string>,
  note: RevisionNote,
  objects: EmbeddedState['objects'],
): (v: JsonObject) => string | undefined {
  const before = new Map<JsonObject, string>();
  for (const c of note.changes) {
    if (c.before === undefined) continue;
    const o = objects.get(c.key);
    if (o && o.value === c.before) before.set(c.before, o.text);
  }
  return (v) => texts.get(v) ?? before.get(v);
}

/** The commit: all or nothing, checked, written to the file, then applied and announced. */
function atomicCommit(
  state: EmbeddedState,
  { aof, keepMs, checkOpen, changed }: ConfigDeps,
  committed: (revision: number, keys: string[]) => void,
): Store['commit'] {
  const { objects, history } = state;
  return async (ops, note): Promise<CommitResult> => {
    checkOpen();
    if (ops.length === 0) return { ok: true, etags: {}, revision: state.revision };
    for (const op of ops) {
      const e = op.expect;
      if (e === undefined) continue;
      const cur = objects.get(op.key);
      if (e === null && cur) return { ok: false, key: op.key, reason: 'exists' };
      if (e !== null && !cur) return { ok: false, key: op.key, reason: 'missing' };
      if (e !== null && e !== '*' && cur && cur.etag !== e) return { ok: false, key: op.key, reason: 'etag-mismatch' };
    }
    // Serialise everything before touching state, so a value that cannot be stored fails the whole commit.
    const encoded: EncodeOp[] = [];
    const etags: Record<string, string> = {};
    /** Each stored value's JSON text, for the note (whose `after`s are these values). */
    const texts = new Map<JsonObject, string>();
    for (const op of ops) {
      if (op.op === 'put') {
        const text = JSON.stringify(op.value);
        encoded.push({ k: op.key, text });
        texts.set(op.value, text);
        etags[op.key] = etagOf(op.value);
      } else {
        encoded.push({ k: op.key, d: 1 });
        delete etags[op.key];
      }
    }
    // CONFIG_HISTORY=0: no history is kept.
    const noteText = note && keepMs > 0 ? encodeNote(note, noteTexts(texts, note, objects)) : undefined;
    aof.append(encodeCommit(state.revision + 1, encoded, noteText));
    const revision = ++state.revision;
    if (noteText !== undefined) {
      const now = Date.now();
      history.push({ revision, text: noteText, time: Date.parse(note!.time) || now });
      if (history.length % 256 === 0) dropExpired(history, keepMs, now);
    }
    for (const op of encoded) {
      const etag = etags[op.k];
      if ('text' in op && etag) objects.set(op.k, { text: op.text, etag });
      else objects.delete(op.k);
    }
    const keys = encoded.map((op) => op.k);
    committed(revision, keys);
    changed(keys);
    return { ok: true, etags, revision };
  };
}
