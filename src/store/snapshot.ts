/**
 * The whole configuration at one revision, read again cheaply: each read takes, in one atomic
 * step with their revision, the ETags of what changed since the previous read
 * (store.etagsSince; the store's full ETags when it cannot tell), and reads only the objects
 * whose ETag moved. A value read must still carry the ETag of that revision (an ETag is a
 * digest of the content), else a commit came in between and the read starts over.
 *
 * For readers that need everything after every commit (the fleet projector, the exporter
 * supervisor): on Redis a full list of 10,000 objects is 10,000 values to decode and parse,
 * and even their ETags are 10,000 lookups in Redis and 20,000 strings to decode; what changed
 * since is a few keys.
 */
import type { JsonObject } from '../lib/json.js';
import type { Entry, EtagsAt, Store } from './store.js';
import { deepFreeze } from './freeze.js';
import { LayeredMap } from '../lib/layered-map.js';

export type Snapshot = {
  revision: number;
  /** Key → value, in key order. */
  values: ReadonlyMap<string, JsonObject>;
  /** Key → ETag. */
  etags: ReadonlyMap<string, string>;
  /** Keys created, changed or deleted since the previous read (every key at the first). */
  changed: ReadonlySet<string>;
};

export type SnapshotReader = {
  /**
   * The configuration now, or undefined when commits kept coming during five attempts.
   * `full` compares every ETag with the previous read's instead of asking what changed since
   * (the fleet projector's periodic full pass: level-triggered all the way down).
   */
  read(opts?: { full?: boolean }): Promise<Snapshot | undefined>;
};

/** Values read one by one when no more than this many changed; else one list of everything. */
const oneByOne = 200;

type Last = Snapshot & EtagsAt;

/** The ETags now and the keys whose ETag moved since `prev`: what changed since, or every ETag compared. */
async function etagsNow(
  store: Store,
  prev: Last | undefined,
  full: boolean,
): Promise<{ at: EtagsAt; etags: ReadonlyMap<string, string>; changed: Set<string> }> {
  const changed = new Set<string>();
  const since = prev && !full ? await store.etagsSince(prev) : undefined;
  if (prev && since) {
    if (since.revision === prev.revision) return { at: since, etags: prev.etags, changed };
    const moved = new Map<string, string | undefined>();
    let sameKeys = true;
    for (const [key, etag] of since.changed) {
      const before = prev.etags.get(key);
      if (before === etag) continue;
      moved.set(key, etag);
      if (before === undefined || etag === undefined) sameKeys = false;
      changed.add(key);
    }
    // The same keys (the usual commit: objects changed, none created or deleted): no copy.
    if (sameKeys) return { at: since, etags: LayeredMap.replacing(prev.etags, moved as Map<string, string>), changed };
    const etags = new Map(prev.etags);
    for (const [key, etag] of moved) {
      if (etag === undefined) etags.delete(key);
      else etags.set(key, etag);
    }
    return { at: since, etags, changed };
  }
  const { revision, mark, etags } = await store.etags('');
  for (const [key, etag] of etags) if (prev?.etags.get(key) !== etag) changed.add(key);
  if (prev) for (const key of prev.etags.keys()) if (!etags.has(key)) changed.add(key);
  return { at: { revision, mark }, etags, changed };
}

export function snapshotReader(store: Store): SnapshotReader {
  let last: Last | undefined;
  return {
    async read(opts) {
      for (let attempt = 0; attempt < 5; attempt++) {
        const prev = last;
        const { at, etags, changed } = await etagsNow(store, prev, opts?.full === true);
        if (prev && prev.revision === at.revision && changed.size === 0) {
          last = { ...prev, mark: at.mark };
          return { ...prev, changed };
        }
        const wanted = [...changed].filter((key) => etags.has(key));
        const fetched = new Map<string, JsonObject>();
        // Frozen whole, as a list gives them: shared by every reader of the snapshot (and their
        // encodings kept: the fleet log writes one object into hundreds of sites' logs).
        const keep = (e: Entry | undefined) => {
          if (e && etags.get(e.key) === e.etag) fetched.set(e.key, deepFreeze(e.value));
        };
        if (!prev || wanted.length > oneByOne) for (const e of await store.list('')) keep(e);
        else for (const e of await Promise.all(wanted.map((key) => store.get(key, { fresh: true })))) keep(e);
        if (wanted.some((key) => !fetched.has(key))) continue;
        let values: ReadonlyMap<string, JsonObject>;
        if (prev && prev.etags.size === etags.size && wanted.length === changed.size) {
          // The same keys as before (none created or deleted): the previous order, new values.
          values = LayeredMap.replacing(prev.values, fetched);
        } else {
          const sorted = new Map<string, JsonObject>();
          for (const key of [...etags.keys()].sort()) sorted.set(key, fetched.get(key) ?? prev!.values.get(key)!);
          values = sorted;
        }
        last = { revision: at.revision, mark: at.mark, values, etags, changed };
        return { revision: at.revision, values, etags, changed };
      }
      return undefined;
    },
  };
}
