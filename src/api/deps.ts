/**
 * What the HTTP layer is built from; src/main/server.ts assembles it. The layers above api/
 * (ops/, fleet/, main/) are named here only through the small types they implement
 * (`ProbeCheck`, `FleetView`), never imported.
 */
import type { Settings } from '../lib/settings.js';
import type { Store } from '../store/store.js';
import type { Strongbox } from '../secrets/strongbox.js';
import type { Auth, Principal } from '../auth/index.js';
import type { Bus } from '../bus/index.js';
import type { Json, JsonObject } from '../lib/json.js';
import type { DeliveredHistory } from './history.js';
import type { RuntimeView } from './runtime-view.js';

export type { RuntimeView };

/** One readiness check of GET /readyz: the reason it is not ready, or undefined when it is (ops/probes.ts). */
export type ProbeCheck = {
  readonly name: string;
  run(): Promise<string | undefined> | string | undefined;
};

/**
 * A `site=` read sent down to a site: its tenant, path (`/v1/state…`) and query string
 * (without `site`). `rules` are the caller's read rules (path pattern and
 * effect, as its policies hold them), which the site applies to what it answers (a list's
 * members, `count`, `keys`), as the control plane would; without them the site answers as an
 * administrator of the tenant.
 */
export type ForwardedRead = {
  id: string;
  tenant: string;
  path: string;
  query: string;
  rules?: Array<{ path: string; effect: 'allow' | 'deny' }>;
};

/** The read rules of a forwarded read as it travelled (JSON), when it has them; a malformed rule allows nothing. */
export function forwardedRules(v: unknown): { rules?: NonNullable<ForwardedRead['rules']> } {
  if (!Array.isArray(v)) return {};
  const rules: NonNullable<ForwardedRead['rules']> = [];
  for (const r of v) {
    const rule = r as { path?: unknown; effect?: unknown } | null;
    if (typeof rule?.path !== 'string' || (rule.effect !== 'allow' && rule.effect !== 'deny')) return { rules: [] };
    rules.push({ path: rule.path, effect: rule.effect });
  }
  return { rules };
}
/** The site's answer: the HTTP status and the JSON body its own API gave. */
export type ForwardedAnswer = { status: number; body: Json };
/** What a site reported: per tenant, its state objects (state.ts `ReportedItem`), and when. */
export type SiteReport = { time: string; tenants: Record<string, unknown[]> };

/** At a control plane: what `site=` reads of another site use (api/site-reads.ts). */
export type SiteReads = {
  /** The site's live answer, or undefined when it is not connected or did not answer in time. */
  ask(site: string, read: Omit<ForwardedRead, 'id'>): Promise<ForwardedAnswer | undefined>;
  lastReport(site: string): Promise<SiteReport | undefined>;
};

/** The fleet's series at a control plane, read when /metrics is scraped (fleet/control/metrics-source.ts). */
export type FleetSample = {
  /** Sites by connection state: connected, disconnected, never-connected. */
  connections: Record<string, number>;
  sites: Array<{ site: string; lag: number; lastSeenSeconds?: number }>;
};

/** What the API asks of the fleet role (src/fleet/ implements it). */
export type FleetView = {
  /** At a control plane: the link fields of GET /v1/state/sites/<name> (undefined at an edge site). */
  siteState(site: string): Promise<JsonObject | undefined>;
  /** At a control plane: reads of another site (`site=`); undefined at an edge site. */
  reads: SiteReads | undefined;
  /**
   * At a control plane: the fleet's state of exporter `tenant/name` (fleet/control/exporter-view.ts),
   * given this site's own (`local`); absent at an edge site.
   */
  exporterView?(tenant: string, name: string, local: JsonObject | undefined): Promise<JsonObject | undefined>;
  /**
   * At a control plane: the progress of the staged rollout of the object at store key `key`
   * (fleet/control/rollouts.ts), the members its state's `rollout` adds; undefined without one.
   */
  rolloutState?(key: string): Promise<JsonObject | undefined>;
};

export type AppDeps = {
  settings: Settings;
  store: Store;
  strongbox: Strongbox;
  auth: Auth;
  bus: Bus;
  runtime?: RuntimeView;
  /** Readiness checks besides store, bus and secret store (GET /readyz). */
  readyChecks?: ProbeCheck[];
  /** Samples of exporter counters for the status page (api/history.ts). */
  history?: DeliveredHistory;
  /** The fleet role (src/fleet/): control plane or edge site. */
  fleet?: FleetView;
};

export type AppEnv = { Variables: { principal?: Principal } };
