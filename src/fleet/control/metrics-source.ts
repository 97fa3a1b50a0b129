/**
 * The fleet's series in `/metrics` at a control plane (CONTRACT §8, §11), read when scraped:
 *
 *   edgeplane_fleet_sites{connection}             sites by connection state (connected,
 *                                                 disconnected, never-connected)
 *   edgeplane_fleet_site_change_lag{site}         changes in the site's log not yet
 *                                                 acknowledged (every retained entry for a
 *                                                 site that never acknowledged or is beyond
 *                                                 the history)
 *   edgeplane_fleet_site_last_seen_seconds{site}  seconds since the site was last heard
 *                                                 (sites never heard have no series)
 *
 * The sites are the root tenant's site objects other than the control plane's own. A scrape
 * reads each site's presence (three kv reads) and the heads of all logs in one round trip; only
 * a site behind its head has its log read (up to `lagCap` entries).
 */
import type { FleetSample } from '../../api/deps.js';
import { site } from '../../resources/site.js';
import type { Store } from '../../store/store.js';
import type { FleetLog } from './change-log.js';
import { linkOf } from './presence.js';

const lagCap = 100_000;
/** Sites read at once by a scrape. */
const atOnce = 64;

export function fleetMetricsSource(o: {
  store: Store;
  fleetLog: FleetLog;
  root: string;
  ownSite: string;
  now?: () => number;
}): () => Promise<FleetSample> {
  const now = o.now ?? Date.now;
  return async () => {
    const names = (await o.store.list(site.keyOf(o.root)))
      .map((e) => site.parseKey(e.key))
      .filter((p) => p?.tenant === o.root)
      .map((p) => p!.name!)
      .filter((n) => n !== o.ownSite);
    const heads = await o.fleetLog.heads(names);
    const out: FleetSample = { connections: { connected: 0, disconnected: 0, 'never-connected': 0 }, sites: [] };
    for (let i = 0; i < names.length; i += atOnce) {
      const rows = await Promise.all(
        names.slice(i, i + atOnce).map(async (site) => {
          const { connection, seen, applied } = await linkOf(o.store, site);
          let lag = 0;
          if (applied === undefined) lag = await o.fleetLog.length(site);
          else if (applied !== heads.get(site)) {
            const behind = await o.fleetLog.since(site, applied, lagCap);
            lag = behind === 'reset' ? await o.fleetLog.length(site) : behind.length;
          }
          const seenMs = seen !== undefined ? Date.parse(seen) : NaN;
          return {
            site,
            connection,
            lag,
            lastSeenSeconds: Number.isFinite(seenMs) ? Math.max(0, (now() - seenMs) / 1000) : undefined,
          } as const;
        }),
      );
      for (const r of rows) {
        out.connections[r.connection] = (out.connections[r.connection] ?? 0) + 1;
        out.sites.push({
          site: r.site,
          lag: r.lag,
          ...(r.lastSeenSeconds !== undefined ? { lastSeenSeconds: r.lastSeenSeconds } : {}),
        });
      }
    }
    return out;
  };
}
