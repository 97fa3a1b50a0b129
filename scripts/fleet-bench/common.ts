/**
 * What the fleet bench's orchestrator (bench-fleet.ts, harness.ts, phases.ts) and its site
 * processes (site-process.ts) share: the options, the messages between them, the markers that
 * say which write a site holds, and the bench's model of the configuration.
 */
import { createHash } from 'node:crypto';

export const SITES = Number(process.env.BENCH_SITES ?? 1000);
/** Site processes: by default one per 2,500 sites, at least 3 (each one is a Node process of its own). */
export const PROCS = Math.max(1, Math.min(16, Number(process.env.BENCH_PROCS ?? Math.max(3, Math.ceil(SITES / 2500)))));
/** Control-plane processes sharing the Redis and the sites (site i connects to process i mod CPS). */
export const CPS = Math.max(1, Math.min(4, Number(process.env.BENCH_CPS ?? 1)));
/** The Redis deployment under the control plane: `standalone` (one redis-server) or `sentinel`. */
export const REDIS_KIND = process.env.BENCH_REDIS ?? 'standalone';
export const RATE = Number(process.env.BENCH_RATE ?? 20);
export const CHURN_SECONDS = Number(process.env.BENCH_CHURN_SECONDS ?? 30);
/** Churn writes answered outstanding at most (BENCH_CHURN_IN_FLIGHT; 1: each waits for the one before). */
export const CHURN_IN_FLIGHT = Math.max(1, Number(process.env.BENCH_CHURN_IN_FLIGHT ?? 8));
export const IDLE_SECONDS = Number(process.env.BENCH_IDLE_SECONDS ?? 32);
export const ALL_ROUNDS = Number(process.env.BENCH_ALL_ROUNDS ?? 3);
export const BASE_WRITES = Number(process.env.BENCH_BASE_WRITES ?? 100);
export const PROFILE = process.env.BENCH_PROFILE === '1';
/** BENCH_ACKS=post: the simulated sites acknowledge as FLEET_ACKS=post does (a GET stream, one POST an ack). */
export const ACKS: 'stream' | 'post' = process.env.BENCH_ACKS === 'post' ? 'post' : 'stream';
/** BENCH_UNTIL=<phase> (fleet, allSites, churn, idle, restart): the run stops after that phase. */
export const UNTIL = process.env.BENCH_UNTIL ?? '';
export const PASSWORD = 'bench-password-1';
export const TENANT = 'default';
export const GROUPS = 50;
export const REGIONS = 10;
export const EXPORTERS = 40;

/** The goals of issue #21 (10,000 sites), printed beside each figure. */
export const goals = {
  churnP99Ms: 1000,
  allSitesMs: 5000,
  resumeS: 60,
  idleBitPerSite: 250,
  kibPerSite: 8,
};

export const siteName = (i: number) => `s${String(i).padStart(5, '0')}`;
export const siteIndex = (site: string) => Number(site.slice(1));
export const siteKey = (site: string) => `${TENANT}/sites/${site}`;
export const exporterKey = (name: string) => `${TENANT}/volga/webhooks/${name}`;
export const now = () => performance.timeOrigin + performance.now();
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function percentile(xs: number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
}

/** An expectation: `site` holds `key` with `marker` (null: no longer holds it) once write `id` applied. */
export type Item = [site: string, key: string, marker: string | null];
export const markerIndex = (m: string | null) => (m ? Number(m.slice(1)) : -1);

export function markerOf(key: string, value: unknown): string | null | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as { url?: unknown; labels?: Record<string, unknown> };
  if (key.startsWith(`${TENANT}/volga/webhooks/`) && typeof v.url === 'string')
    return /\/(w\d+)$/.exec(v.url)?.[1] ?? null;
  if (key.startsWith(`${TENANT}/sites/`) && typeof v.labels?.['bench-w'] === 'string') return v.labels['bench-w'];
  return undefined;
}

/** Digest of a set of objects, the same for the site's copy and the control plane's hash. */
export function digest(entries: Iterable<[string, unknown]>): string {
  const h = createHash('sha1');
  for (const [k, v] of [...entries].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)))
    h.update(k + '\n' + JSON.stringify(v) + '\n');
  return h.digest('hex');
}

// ---- the messages between the orchestrator and a site process --------------------------------

export type ToChild =
  | {
      type: 'start';
      rid: number;
      /** The control-plane URLs; site i connects to urls[i mod urls.length]. */
      urls: string[];
      sites: Array<{ site: string; token: string }>;
    }
  | { type: 'expect'; id: number; t0: number; items: Item[] }
  /** `upTo`: count as stuck only the expectations of writes up to this id (see Tracker.stuck). */
  | { type: 'status'; rid: number; upTo?: number }
  | { type: 'results'; rid: number; final: boolean }
  | { type: 'audit'; rid: number }
  | { type: 'stop'; rid: number };

export type Status = {
  sites: number;
  connected: number;
  synced: number;
  pending: number;
  /** Pending expectations whose site does not yet hold the newest state expected of that object. */
  stuck: number;
  bytes: number;
  segments: number;
  /** TCP connections the sites opened (each costs a handshake and a close on the wire). */
  connects: number;
  cpuMs: number;
};
export const emptyStatus = (): Status => ({
  sites: 0,
  connected: 0,
  synced: 0,
  pending: 0,
  stuck: 0,
  bytes: 0,
  segments: 0,
  connects: 0,
  cpuMs: 0,
});

export type SiteAudit = {
  site: string;
  events: Array<['snapshot' | 'change', string]>;
  skipped: number;
  digest: string;
  /** The bench's objects the site holds, with their markers. */
  held: Array<[string, string | null]>;
};
/** An expectation no apply answered: the write, site, key, marker expected and the last one seen. */
export type Unmet = { id: number; site: string; key: string; marker: string | null; seen: string | null | undefined };

// ---- the bench's model of the configuration: which sites each write concerns ------------------

export type SiteModel = { region: number; group: number; marker: string };
export type ExporterModel = { name: string; selector: string; marker: string };

export function matches(selector: string, s: SiteModel, name: string): boolean {
  if (selector === 'all') return true;
  const [label, value] = selector.split('=') as [string, string];
  if (label === 'group') return `g${s.group}` === value;
  if (label === 'region') return `r${s.region}` === value;
  return label === 'system/name' && value === name;
}

const placementOf = (selector: string) =>
  selector === 'all' ? { 'all-sites': true } : { 'match-site-labels': selector };

export const exporterBody = (e: ExporterModel) => ({
  name: e.name,
  topics: ['bench'],
  'site-placement': placementOf(e.selector),
  url: `http://127.0.0.1:9/${e.marker}`,
  data: '${MSG}',
});
export const siteBody = (name: string, s: SiteModel) => ({
  name,
  type: 'edge',
  labels: { region: `r${s.region}`, group: `g${s.group}`, 'bench-w': s.marker },
});
