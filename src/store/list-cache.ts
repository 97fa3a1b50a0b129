/**
 * A read cache for the Redis store's `list(prefix)`, so a list read (a GET of a list, its
 * `count`, a `where` over it) costs what it costs on the embedded store: no round trip and no
 * JSON parse of every member. It follows read-cache.ts's rules for single reads:
 *
 * - It is kept current by the store's change notifications (every process's commits) and by
 *   this process's own commits at once: a changed key under a cached prefix is marked dirty,
 *   and the next read of that prefix reads only the dirty keys again (present: added or
 *   changed; absent: deleted) before it answers. A read that starts after a commit (this
 *   process's, or another's whose notification arrived) sees it.
 * - After `maxAgeMs` a cached list is checked against the store's ETags (the `etags` script:
 *   one round trip, no value read) and the members whose ETag moved are read again: what it
 *   serves is at most that old even when notifications were lost, as single reads are.
 * - Nothing is kept while the change subscription is down (`setLive(false)`), and everything
 *   is dropped when it goes down.
 * - One refresh of a prefix at a time: a read arriving during one waits for it, then checks
 *   again, so no read answers from before a change it was notified of.
 *
 * Values are deep-frozen and shared by every reader, like the embedded store's; so is the array.
 */
import type { Entry } from './store.js';
import { deepFreeze } from './freeze.js';
import { BoundedMap } from '../lib/bounded-cache.js';

/** How the cache reads the store: everything under a prefix, some keys, the ETags under a prefix. */
export type ListSource = {
  all(prefix: string): Promise<Entry[]>;
  some(keys: string[]): Promise<Map<string, Entry>>;
  etags(prefix: string): Promise<Map<string, string>>;
};

export type ListCache = {
  list(prefix: string): Promise<Entry[]>;
  invalidate(keys: readonly string[]): void;
  setLive(live: boolean): void;
};

type Cached = {
  byKey: Map<string, Entry>;
  /** The members in key order; undefined until built (again). */
  sorted: Entry[] | undefined;
  /** Keys changed since they were read: read again before the next answer. */
  dirty: Set<string>;
  /** Every key must be checked against the store's ETags (loaded, or past its age). */
  recheck: boolean;
  checkedAt: number;
  refreshing: Promise<void> | undefined;
};

const byKeyOrder = (a: Entry, b: Entry): number => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);

function under(prefix: string, key: string): boolean {
  return prefix === '' || key === prefix || (key.startsWith(prefix) && key.charCodeAt(prefix.length) === 0x2f);
}

function frozen(e: Entry): Entry {
  deepFreeze(e.value);
  return e;
}

export function createListCache(
  source: ListSource,
  opts: { maxAgeMs: number; maxLists: number; now?: () => number },
): ListCache {
  const now = opts.now ?? Date.now;
  let live = false;
  const lists = new BoundedMap<string, Cached>(opts.maxLists);

  async function load(prefix: string, c: Cached): Promise<void> {
    const all = await source.all(prefix);
    c.byKey = new Map(all.map((e) => [e.key, frozen(e)]));
    c.sorted = Object.freeze([...c.byKey.values()].sort(byKeyOrder)) as Entry[];
    c.checkedAt = now();
  }

  /** Reads the dirty keys again, and after maxAgeMs every key whose ETag moved. */
  async function refresh(prefix: string, c: Cached): Promise<void> {
    if (c.recheck) {
      c.recheck = false;
      const etags = await source.etags(prefix);
      c.checkedAt = now();
      for (const [key, e] of c.byKey) if (etags.get(key) !== e.etag) c.dirty.add(key);
      for (const key of etags.keys()) if (!c.byKey.has(key)) c.dirty.add(key);
    }
    if (c.dirty.size === 0) return;
    const keys = [...c.dirty];
    c.dirty.clear();
    const got = await source.some(keys);
    for (const key of keys) {
      const e = got.get(key);
      if (e) c.byKey.set(key, frozen(e));
      else c.byKey.delete(key);
    }
    c.sorted = undefined;
  }

  async function answer(prefix: string, c: Cached): Promise<Entry[]> {
    // Bounded: each turn either answers or runs one refresh; changes arriving faster than
    // refreshes finish make the read answer from the store itself.
    for (let turn = 0; turn < 8; turn++) {
      if (c.refreshing) {
        await c.refreshing;
        continue;
      }
      if (now() - c.checkedAt >= opts.maxAgeMs) c.recheck = true;
      if (!c.recheck && c.dirty.size === 0)
        return (c.sorted ??= Object.freeze([...c.byKey.values()].sort(byKeyOrder)) as Entry[]);
      const run = refresh(prefix, c);
      c.refreshing = run;
      try {
        await run;
      } catch (err) {
        lists.delete(prefix);
        throw err;
      } finally {
        c.refreshing = undefined;
      }
    }
    return source.all(prefix);
  }

  return {
    async list(prefix) {
      if (!live) return source.all(prefix);
      let c = lists.get(prefix);
      if (!c) {
        c = { byKey: new Map(), sorted: [], dirty: new Set(), recheck: false, checkedAt: 0, refreshing: undefined };
        const fresh = c;
        lists.set(prefix, fresh);
        const run = load(prefix, fresh);
        fresh.refreshing = run;
        try {
          await run;
        } catch (err) {
          if (lists.get(prefix) === fresh) lists.delete(prefix);
          throw err;
        } finally {
          fresh.refreshing = undefined;
        }
      }
      return answer(prefix, c);
    },
    invalidate(keys) {
      if (lists.size === 0) return;
      for (const [prefix, c] of lists) for (const k of keys) if (under(prefix, k)) c.dirty.add(k);
    },
    setLive(value) {
      live = value;
      lists.clear();
    },
  };
}
