/**
 * The whole configuration at one revision, read again cheaply: each read takes the store's
 * ETags in one atomic step with their revision (store.etags) and reads only the objects whose
 * ETag moved since the previous read. A value read must still carry the ETag of that revision
 * (an ETag is a digest of the content), else a commit came in between and the read starts over.
 *
 * For readers that need everything after every commit (the fleet projector, the exporter
 * supervisor): on Redis a full list of a thousand objects is a thousand values to decode and
 * parse; this is a thousand short ETags and the few values that changed.
 */
import type { JsonObject } from '../lib/json.js';
import type { Entry, Store } from './store.js';

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
  /** The configuration now, or undefined when commits kept coming during five attempts. */
  read(): Promise<Snapshot | undefined>;
};

/** Values read one by one when no more than this many changed; else one list of everything. */
const oneByOne = 200;

export function snapshotReader(store: Store): SnapshotReader {
  let last: Snapshot | undefined;
  return {
    async read() {
      for (let attempt = 0; attempt < 5; attempt++) {
        const { revision, etags } = await store.etags('');
        const prev = last;
        if (prev && prev.revision === revision) return { ...prev, changed: new Set() };
        const changed = new Set<string>();
        for (const [key, etag] of etags) if (prev?.etags.get(key) !== etag) changed.add(key);
        if (prev) for (const key of prev.etags.keys()) if (!etags.has(key)) changed.add(key);
        const wanted = [...changed].filter((key) => etags.has(key));
        const fetched = new Map<string, JsonObject>();
        const keep = (e: Entry | undefined) => {
          if (e && etags.get(e.key) === e.etag) fetched.set(e.key, e.value);
        };
        if (!prev || wanted.length > oneByOne) for (const e of await store.list('')) keep(e);
        else for (const e of await Promise.all(wanted.map((key) => store.get(key, { fresh: true })))) keep(e);
        if (wanted.some((key) => !fetched.has(key))) continue;
        let values: Map<string, JsonObject>;
        if (prev && prev.etags.size === etags.size && wanted.length === changed.size) {
          // The same keys as before (none created or deleted): the previous order, new values.
          values = new Map(prev.values);
          for (const [key, value] of fetched) values.set(key, value);
        } else {
          values = new Map();
          for (const key of [...etags.keys()].sort()) values.set(key, fetched.get(key) ?? prev!.values.get(key)!);
        }
        last = { revision, values, etags, changed };
        return last;
      }
      return undefined;
    },
  };
}
