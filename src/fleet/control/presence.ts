/**
 * What the control plane knows of each site's link, in the store's kv area so that every
 * control-plane process sharing the store answers the same (any of them may hold the stream):
 *
 *   fleet:conn:<site>     id of a live sync stream, expiring unless its process refreshes it
 *   fleet:seen:<site>     last time the site was heard (connect, each keep-alive of its stream, report, disconnect)
 *   fleet:{applied}:<site>  last version the site applied (its Last-Event-ID, then its acks); the
 *                         hash tag puts every site's in one slot on Cluster, so that the versions
 *                         acknowledged together are one MSET there too
 *   fleet:report:<site>   the last state the site reported, {time, tenants} (JSON)
 *
 * `GET /v1/state/sites/<name>` adds `connection` (connected | disconnected | never-connected),
 * `last-seen`, `config-version` and `in-sync` (the applied version is the log's head).
 */
import type { JsonObject } from '../../lib/json.js';
import type { Store } from '../../store/store.js';
import type { SiteReport } from '../../api/deps.js';
import type { FleetLog } from './change-log.js';

const conn = 'fleet:conn:';
const seen = 'fleet:seen:';
const applied = 'fleet:{applied}:';
const report = 'fleet:report:';

export type { SiteReport };

/** A site's link as stored: its connection state, when it was last heard, what it applied last. */
export async function linkOf(
  store: Store,
  site: string,
): Promise<{ connection: 'connected' | 'disconnected' | 'never-connected'; seen?: string; applied?: string }> {
  const [c, s, a] = await Promise.all([
    store.kvGet(conn + site),
    store.kvGet(seen + site),
    store.kvGet(applied + site),
  ]);
  const connection = c !== undefined ? 'connected' : s !== undefined ? 'disconnected' : 'never-connected';
  return { connection, ...(s !== undefined ? { seen: s } : {}), ...(a !== undefined ? { applied: a } : {}) };
}

export type Presence = {
  connected(site: string, id: string, ttlMs: number): Promise<void>;
  disconnected(site: string, id: string): Promise<void>;
  applied(site: string, version: string): Promise<void>;
  fields(site: string): Promise<JsonObject>;
  /** True while some control-plane process holds a sync stream of the site. */
  isConnected(site: string): Promise<boolean>;
  /** Keeps the site's report (replacing the previous one) with the time it arrived. */
  reported(site: string, tenants: Record<string, unknown[]>): Promise<void>;
  lastReport(site: string): Promise<SiteReport | undefined>;
  /**
   * At this process's stop, before its store closes: every stream it holds is disconnected now
   * (the streams themselves end later, when the server closes their sockets, and their store
   * may be gone by then). A site is otherwise shown connected until its presence expires
   * (3 keep-alives), also to a control plane restarted meanwhile.
   */
  releaseAll(): Promise<void>;
};

/**
 * Versions applied (acknowledgements) heard within this time are written together: one write to
 * the store's connection for all of them rather than one a site (10,000 sites acknowledge one
 * change within seconds). An acknowledgement is answered once its write is done.
 */
const appliedBatchMs = 10;

export function createPresence(store: Store, fleetLog: FleetLog, now: () => number = Date.now): Presence {
  const touch = (site: string) => store.kvSet(seen + site, new Date(now()).toISOString());
  /** The versions applied waiting for the next write (per site, the last heard), and that write. */
  let pending: { versions: Map<string, string>; written: Promise<void> } | undefined;
  // An acknowledgement comes on the site's stream, whose presence (and `seen`) is refreshed every
  // keep-alive as long as it is open: `seen` is not written again for each one (it was half of
  // the writes of a change at every site, and on Cluster one SET each).
  const writeApplied = async (versions: Map<string, string>): Promise<void> => {
    await new Promise((r) => setTimeout(r, appliedBatchMs));
    pending = undefined; // what comes now waits for the next write
    await store.kvSetMany([...versions].map(([site, version]) => [applied + site, version] as const));
  };
  /** The streams this process holds: id → site. */
  const held = new Map<string, string>();
  /** Set by releaseAll: a stream's refresh after it does not mark the site connected again. */
  let released = false;
  const disconnected = async (site: string, id: string) => {
    held.delete(id);
    // Another stream of the same site (a reconnection that overtook this one) stays connected.
    if ((await store.kvGet(conn + site)) === id) await store.kvDel(conn + site);
    await touch(site);
  };
  return {
    async connected(site, id, ttlMs) {
      if (released) return;
      held.set(id, site);
      await Promise.all([store.kvSet(conn + site, id, ttlMs), touch(site)]);
    },
    disconnected,
    async releaseAll() {
      released = true;
      await Promise.all([...held].map(([id, site]) => disconnected(site, id).catch(() => undefined)));
    },
    applied(site, version) {
      if (!pending) {
        const versions = new Map<string, string>();
        pending = { versions, written: writeApplied(versions) };
      }
      pending.versions.set(site, version);
      return pending.written;
    },
    async isConnected(site) {
      return (await store.kvGet(conn + site)) !== undefined;
    },
    async reported(site, tenants) {
      const doc: SiteReport = { time: new Date(now()).toISOString(), tenants };
      await store.kvSet(report + site, JSON.stringify(doc));
      await touch(site);
    },
    async lastReport(site) {
      const text = await store.kvGet(report + site);
      if (text === undefined) return undefined;
      try {
        const doc = JSON.parse(text) as SiteReport;
        return typeof doc.time === 'string' && typeof doc.tenants === 'object' ? doc : undefined;
      } catch {
        return undefined;
      }
    },
    async fields(site) {
      const { connection, seen: s, applied: a } = await linkOf(store, site);
      const out: JsonObject = { connection, 'in-sync': false };
      if (s !== undefined) out['last-seen'] = s;
      if (a !== undefined) {
        out['config-version'] = a;
        const behind = await fleetLog.since(site, a, 1);
        out['in-sync'] = behind !== 'reset' && behind.length === 0;
      }
      return out;
    },
  };
}
