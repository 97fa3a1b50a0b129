/**
 * The fleet's view of a webhook exporter at a control plane (CONTRACT §11): an exporter placed
 * on other sites is shown as the fleet runs it, not as this process runs it (here it would be
 * `stopped` with nothing delivered).
 *
 *   status    `ready` when every site where it is placed reports `ready`, else the worst of
 *             the sites' statuses (error > retrying > starting > paused > ready); `stopped`
 *             only when it is placed nowhere (`sites` then empty)
 *   counters  the sums over those sites (delivered, dropped, ignored, filtered,
 *             failed-attempts, in-flight; topic-lag per topic)
 *   sites     [{site, status, delivered, dropped, ignored, filtered, failed-attempts, lag,
 *             last-error, last-error-time, reported-at, connection}], from each site's last
 *             report (control/presence.ts); the control plane's own site from its own runtime.
 *             `connection` (an extension) is `disconnected` while no control-plane process
 *             holds the site's sync stream (`never-connected` when it never reported): the row
 *             is then its last report, not live
 *
 * A site that has not reported the exporter yet (never connected, or not yet synced: it says
 * `stopped` or has no such object) counts as `starting`: the fleet does not run it there yet.
 * An exporter placed on this site only is shown as this site runs it, unchanged.
 *
 * Where it is placed is computed with the projector's own placement code (applicable.ts), on
 * the sites of the root tenant plus this control plane's own site.
 */
import { isObject, type Json, type JsonObject } from '../../lib/json.js';
import { deployment } from '../../resources/deployment.js';
import { site } from '../../resources/site.js';
import { webhook } from '../../resources/webhook/index.js';
import type { Store } from '../../store/store.js';
import type { SiteReport } from '../../api/deps.js';
import { indexView, webhookPlacement } from './applicable.js';

const counters = ['delivered', 'dropped', 'ignored', 'filtered', 'failed-attempts'] as const;

/** Worst first: the fleet's status is the first of these that some site reports. */
const severity = ['error', 'retrying', 'starting', 'paused', 'ready'] as const;
type FleetStatus = (typeof severity)[number];

export type ExporterViewOptions = {
  store: Store;
  root: string;
  ownSite: string;
  lastReport(site: string): Promise<SiteReport | undefined>;
  /** True while some control-plane process holds the site's sync stream. */
  isConnected(site: string): Promise<boolean>;
  now?: () => number;
  /** How long a parsed report is reused by the reads that follow (a list reads each site once). */
  reportTtlMs?: number;
};

export type ExporterView = (
  tenant: string,
  name: string,
  local: JsonObject | undefined,
) => Promise<JsonObject | undefined>;

const num = (v: Json | undefined): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

function statusOf(v: Json | undefined): FleetStatus {
  return (severity as readonly string[]).includes(v as string) ? (v as FleetStatus) : 'starting';
}

function lagOf(state: JsonObject | undefined): number {
  const lags = state?.['topic-lag'];
  if (!Array.isArray(lags)) return 0;
  return lags.reduce<number>((sum, t) => sum + (isObject(t) ? num(t.lag) : 0), 0);
}

/** One site's row of `sites` from its state of the exporter (undefined: not reported yet). */
export function siteRow(
  site: string,
  state: JsonObject | undefined,
  reportedAt: string | undefined,
  connected = true,
): JsonObject {
  const row: JsonObject = { site, status: statusOf(state?.status) };
  for (const c of counters) row[c] = num(state?.[c]);
  row.lag = lagOf(state);
  if (typeof state?.['last-error'] === 'string') row['last-error'] = state['last-error'];
  if (typeof state?.['last-error-time'] === 'string') row['last-error-time'] = state['last-error-time'];
  if (reportedAt !== undefined) row['reported-at'] = reportedAt;
  // As the site's own state says it: a site that never reported has never been connected.
  row.connection = connected ? 'connected' : reportedAt === undefined ? 'never-connected' : 'disconnected';
  return row;
}

/** The fleet's state of one exporter from its per-site states (in site order). */
export function aggregate(rows: ReadonlyArray<{ row: JsonObject; state: JsonObject | undefined }>): JsonObject {
  const out: JsonObject = {};
  let worst = severity.length - 1;
  for (const { row } of rows) worst = Math.min(worst, severity.indexOf(row.status as FleetStatus));
  out.status = severity[worst] as string;
  for (const c of counters) out[c] = rows.reduce((s, r) => s + num(r.row[c]), 0);
  out['in-flight'] = rows.reduce((s, r) => s + num(r.state?.['in-flight']), 0);
  const lag = new Map<string, number>();
  const consumed = new Set<string>();
  let start: string | undefined;
  let lastError: { text: string; time: string } | undefined;
  for (const { state } of rows) {
    for (const t of Array.isArray(state?.['topic-lag']) ? state['topic-lag'] : [])
      if (isObject(t) && typeof t.topic === 'string') lag.set(t.topic, (lag.get(t.topic) ?? 0) + num(t.lag));
    for (const t of Array.isArray(state?.['consumed-topics']) ? state['consumed-topics'] : [])
      if (typeof t === 'string') consumed.add(t);
    const st = state?.['start-time'];
    if (typeof st === 'string' && (start === undefined || st < start)) start = st;
    const e = state?.['last-error'];
    const et = state?.['last-error-time'];
    if (typeof e === 'string' && typeof et === 'string' && (lastError === undefined || et > lastError.time))
      lastError = { text: e, time: et };
  }
  if (start !== undefined) out['start-time'] = start;
  out['consumed-topics'] = [...consumed].sort();
  out['topic-lag'] = [...lag].sort(([a], [b]) => (a < b ? -1 : 1)).map(([topic, l]) => ({ topic, lag: l }));
  if (lastError) {
    out['last-error'] = lastError.text;
    out['last-error-time'] = lastError.time;
  }
  out.sites = rows.map((r) => r.row);
  return out;
}

/** Direct members of a stored list (the list's own key prefix + '/', one segment deeper). */
async function listed(store: Store, prefix: string): Promise<Array<{ key: string; value: JsonObject }>> {
  return (await store.list(prefix)).filter(
    (e) => e.key.startsWith(prefix + '/') && !e.key.slice(prefix.length + 1).includes('/'),
  );
}

type Lister = (prefix: string) => Promise<Array<{ key: string; value: JsonObject }>>;

/** The sites (root tenant's, plus the control plane's own) where exporter `tenant/name` is placed. */
export async function placedSites(
  store: Store,
  root: string,
  ownSite: string,
  tenant: string,
  name: string,
  list: Lister = (prefix) => listed(store, prefix),
) {
  const key = webhook.keyOf(tenant, name);
  const hook = await store.get(key);
  if (!hook) return undefined;
  const view = new Map<string, JsonObject>([[key, hook.value]]);
  const rootSites = await list(site.keyOf(root));
  for (const e of rootSites) view.set(e.key, e.value);
  if (tenant !== root) for (const e of await list(site.keyOf(tenant))) view.set(e.key, e.value);
  for (const e of await list(deployment.keyOf(tenant))) view.set(e.key, e.value);
  const placed = webhookPlacement(view, indexView(view), key);
  const names = [...new Set([ownSite, ...rootSites.map((e) => e.key.slice(e.key.lastIndexOf('/') + 1))])].sort();
  return names.filter(placed);
}

/** The report's state object of exporter `tenant/name`, if the report has one. */
function reportedState(report: SiteReport | undefined, tenant: string, name: string): JsonObject | undefined {
  const items = report?.tenants[tenant];
  if (!Array.isArray(items)) return undefined;
  const path = webhook.pathOf(name);
  for (const i of items) if (isObject(i) && i.path === path && isObject(i.value)) return i.value;
  return undefined;
}

export function createExporterView(o: ExporterViewOptions): ExporterView {
  const now = o.now ?? Date.now;
  const ttl = o.reportTtlMs ?? 500;
  type Seen = { report: SiteReport | undefined; connected: boolean };
  const reports = new Map<string, { at: number; seen: Promise<Seen> }>();
  const reportOf = (site: string) => {
    const hit = reports.get(site);
    if (hit && now() - hit.at < ttl) return hit.seen;
    const seen = Promise.all([o.lastReport(site).catch(() => undefined), o.isConnected(site).catch(() => false)]).then(
      ([report, connected]) => ({ report, connected }),
    );
    reports.set(site, { at: now(), seen });
    // Bounded by the number of sites; entries of deleted sites go at the next expiry sweep.
    if (reports.size > 4 * 1024) for (const [k, v] of reports) if (now() - v.at >= ttl) reports.delete(k);
    return seen;
  };
  // The site and deployment lists, read once for the exporters of a list read (not once each),
  // and again after any configuration change.
  const lists = new Map<string, Promise<Array<{ key: string; value: JsonObject }>>>();
  o.store.onChange(() => lists.clear());
  const list: Lister = (prefix) => {
    let hit = lists.get(prefix);
    if (!hit) {
      hit = listed(o.store, prefix);
      lists.set(prefix, hit);
      hit.catch(() => lists.delete(prefix));
      setTimeout(() => lists.delete(prefix), ttl).unref?.();
    }
    return hit;
  };
  return async (tenant, name, local) => {
    const sites = await placedSites(o.store, o.root, o.ownSite, tenant, name, list);
    if (sites === undefined) return local;
    // Placed on no site: `sites: []` says where it runs.
    if (sites.length === 0) return { ...(local ?? {}), status: 'stopped', sites: [] };
    if (sites.length === 1 && sites[0] === o.ownSite) return local;
    const rows: Array<{ row: JsonObject; state: JsonObject | undefined }> = [];
    for (const site of sites) {
      if (site === o.ownSite) {
        rows.push({ row: siteRow(site, local, new Date(now()).toISOString()), state: local });
        continue;
      }
      const { report, connected } = await reportOf(site);
      const state = reportedState(report, tenant, name);
      // A site that says `stopped` has not applied the placement yet: not running there yet.
      const known = state && state.status !== 'stopped' ? state : undefined;
      rows.push({ row: siteRow(site, known, report?.time, connected), state: known });
    }
    return aggregate(rows);
  };
}
