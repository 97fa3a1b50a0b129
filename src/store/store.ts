/**
 * The store: configuration objects with ETags, an atomic multi-object commit, a small
 * key/value area (tokens, throttles, runtime state) and change notification.
 * Two backends implement it: redis.ts (production, several processes) and embedded.ts
 * (in-process, append-only file under DATA_DIR). One shared suite tests both
 * (test/store/store.test.ts).
 *
 * Keys are opaque strings chosen by the caller (store/keys.ts builds them from tenant and
 * path); `list(prefix)` returns every object whose key equals `prefix` or starts with
 * `prefix + '/'` (prefix '' = everything), sorted by key.
 */
import type { JsonObject } from '../lib/json.js';
import type { RevisionChange, RevisionNote, StoredRevision } from './history.js';

export type { RevisionChange, RevisionNote, StoredRevision };

/**
 * `value` is read-only to callers: the embedded store hands out one shared deep-frozen
 * object per version (no parse per read), Redis a fresh copy. Build new objects to change.
 */
export type Entry = { key: string; value: JsonObject; etag: string };

/**
 * What must hold before a write: `undefined` no condition; `null` the object must not exist;
 * `'*'` it must exist; any other string: it must exist with exactly that ETag.
 */
export type Expect = string | null | undefined;

export type WriteOp =
  { op: 'put'; key: string; value: JsonObject; expect?: Expect } | { op: 'delete'; key: string; expect?: Expect };

/**
 * Where a read of the ETags stands: its revision and the mark of the commit that made it
 * (which history it belongs to; '' when the store cannot tell, and the next read reads everything).
 */
export type EtagsAt = { revision: number; mark: string };
/** What changed after an EtagsAt: each key's ETag now, undefined when deleted. */
export type EtagsSince = EtagsAt & { changed: Map<string, string | undefined> };

export type CommitResult =
  | { ok: true; etags: Record<string, string>; revision: number }
  | { ok: false; key: string; reason: 'exists' | 'missing' | 'etag-mismatch' };

export interface Store {
  readonly kind: 'redis' | 'embedded';
  /**
   * One object. A backend may answer from a cache kept current by change notifications
   * (Redis: see read-cache.ts); `fresh` reads the store itself, as writes must.
   */
  get(key: string, opts?: { fresh?: boolean }): Promise<Entry | undefined>;
  /**
   * The same answer as `get` when the backend can give it from memory without waiting
   * (embedded: always; Redis: a read-cache hit), else 'miss'. Lets a GET of one object be
   * answered synchronously.
   */
  peek(key: string): Entry | undefined | 'miss';
  list(prefix: string): Promise<Entry[]>;
  /**
   * The ETag of every object `list(prefix)` would return, and the revision they are all at,
   * read in one atomic step: what changed since an earlier read, without reading a value (the
   * fleet projector reads only the objects whose ETag moved).
   */
  etags(prefix: string): Promise<{ revision: number; etags: Map<string, string> } & EtagsAt>;
  /**
   * The ETag of each object created or changed (its ETag now) or deleted (undefined) by the
   * commits after `at` (where an earlier etags('') or etagsSince read stood), at the revision
   * returned, read in one atomic step: what changed, without reading every ETag. Undefined when
   * the store cannot tell (more commits since than it remembers, or `at` is from another
   * history: a failover lost commits); etags('') then says. The keys come in the order of the
   * commits, oldest first, each at the first commit that changed it (the fleet projector serves
   * the sites of the oldest change first).
   */
  etagsSince(at: EtagsAt): Promise<EtagsSince | undefined>;
  /**
   * All ops or none; every `expect` is checked against the state at commit time. With a
   * `note`, the commit is also a revision of the configuration history (history.ts), written
   * in the same atomic step.
   */
  commit(ops: WriteOp[], note?: RevisionNote): Promise<CommitResult>;
  /**
   * Revisions of the configuration history, newest first: those at or below `upTo` (default:
   * the newest), at most `limit`. Revisions older than the retention are gone.
   */
  history(opts: { upTo?: number; limit: number }): Promise<StoredRevision[]>;
  /** Increases by one at every successful commit (any process). */
  revision(): Promise<number>;
  /** Called (possibly batched) with the keys changed by commits from any process. */
  onChange(listener: (keys: string[]) => void): () => void;

  /**
   * Small key/value area, not configuration. ttlMs: expiry, none when omitted. A value with a
   * TTL lives in memory only on the embedded store (throttles, claims, presence: a restart
   * forgets them) unless `durable`: then it is kept across restarts until it expires (login
   * tokens). Redis keeps every key as its own persistence does.
   */
  kvGet(key: string): Promise<string | undefined>;
  kvSet(key: string, value: string, ttlMs?: number, opts?: { durable?: boolean }): Promise<void>;
  /** Sets each key to its value, without expiry, as kvSet would one by one (on Redis in one command where slots allow). */
  kvSetMany(entries: ReadonlyArray<readonly [string, string]>): Promise<void>;
  kvDel(key: string): Promise<void>;
  /** Atomically add `by` and return the new value; sets the expiry when the key is new. */
  kvIncr(key: string, by: number, ttlMs?: number): Promise<number>;
  /** Keys of the kv area that start with `prefix`. */
  kvKeys(prefix: string): Promise<string[]>;

  close(): Promise<void>;
}

/** ETag of an object: strong, quoted, derived from the content only. */
export { etagOf } from './etag.js';
