/**
 * This process's fleet role, opened: one control plane, many edge sites, in one binary
 * (settings.fleet picks the role). The control plane's files are in control/, the site's in
 * site/, what both know (the entries, versions and key header they exchange) in common/.
 *
 * Control plane (no CONTROL_PLANE_URL): the projector keeps each site's change log
 * (control/projector.ts, control/change-log.ts) and the app serves issue-token and the sync
 * route (control/routes.ts).
 * Edge site: the rest of the process uses a store that refuses writes to synced objects
 * (site/managed.ts), and the sync loop (site/sync-loop.ts) applies what the control plane sends.
 *
 * server.ts calls openFleet right after opening the store and start() once the app exists
 * (with the hooks an edge site answers reads and builds its state reports with).
 *
 * `site=` reads (api/site-reads.ts) reach a site through `reads`: live down its sync stream by
 * the relay (control/relay.ts: Redis pub/sub, or in process on the embedded store), else its last
 * report (control/presence.ts, in the store's kv area).
 */
import type { Hono } from 'hono';
import type { AppDeps, AppEnv, FleetSample, FleetView, ProbeCheck } from '../api/deps.js';
import { fleetMetricsSource } from './control/metrics-source.js';
import { adminUser } from '../auth/bootstrap.js';
import type { Settings } from '../lib/settings.js';
import type { Store } from '../store/store.js';
import type { Strongbox } from '../secrets/strongbox.js';
import { log } from '../lib/log.js';
import { loadSiteKey, storedPublicKey } from './site/site-key.js';
import { createEmbeddedFleetLog, openRedisFleetLog, type FleetLog } from './control/change-log.js';
import { ManagedKeys, readOnlySynced, syncRecordKey } from './site/managed.js';
import { startProjector, type Projector } from './control/projector.js';
import { createPresence, type Presence } from './control/presence.js';
import { withDeadline } from '../lib/deadline.js';
import { fleetSiteRoutes, fleetUserRoutes } from './control/routes.js';
import { startSiteSync, storeTarget, type SiteHooks, type SiteSync } from './site/sync-loop.js';
import { createEmbeddedRelay, openRedisRelay, type FleetRelay } from './control/relay.js';
import { user } from '../resources/user.js';
import { createExporterView } from './control/exporter-view.js';
import { errorText } from '../lib/error-text.js';
import { createRollouts } from './control/rollouts.js';
import { rolloutOpRoutes } from './control/rollout-routes.js';

/** How long a `site=` read waits for a connected site's answer before it falls back to its report. */
export const siteReadTimeoutMs = 5000;

export type Fleet = FleetView & {
  role: 'control-plane' | 'edge-site';
  /** The store the rest of the process uses (at an edge site: synced objects read-only). */
  store: Store;
  /** The settings auth bootstraps from: a synced admin is the control plane's, not ADMIN_PASSWORD's. */
  authSettings(settings: Settings): Settings;
  /** Routes inside the app's user guard. */
  userRoutes(deps: AppDeps): Hono<AppEnv>[];
  /** Routes with their own guard (site tokens only), registered beside the user guard. */
  siteRoutes(deps: AppDeps): Hono<AppEnv>[];
  /** At a control plane: the fleet's series of /metrics (control/metrics-source.ts). */
  metrics?: () => Promise<FleetSample>;
  /** Readiness (GET /readyz): an edge site is ready once it has applied a configuration. */
  readyChecks: ProbeCheck[];
  /**
   * Called once the secret store is open, before exporters start. Control plane: secrets are
   * sealed for each site with it. Edge site: loads (or makes) the site's key pair, so synced
   * secrets open in memory, also while the control plane is out of reach.
   */
  attachStrongbox(box: Strongbox): Promise<void>;
  start(hooks?: SiteHooks): void;
  close(): Promise<void>;
};

export type FleetOptions = {
  keepAliveMs?: number;
  resyncMs?: number;
  readTimeoutMs?: number;
  /** How often the rollout driver looks at the current waves (ms). */
  rolloutTickMs?: number;
};

/** An edge site: its store refuses writes to synced objects, and the sync loop applies what the control plane sends. */
async function openEdgeSite(settings: Settings, store: Store, url: string, token: string): Promise<Fleet> {
  const f = settings.fleet;
  const managed = new ManagedKeys();
  await managed.load(store);
  let sync: SiteSync | undefined;
  let box: Strongbox | undefined;
  let publicKey: string | undefined;
  const siteKey = async (): Promise<string> => {
    if (publicKey) return publicKey;
    if (!box || box.sealed) {
      // Sealed, a site that has its key pair still syncs (secrets stay closed until unsealed);
      // a site without one waits, as it needs its master key to keep the private part.
      const known = await storedPublicKey(store);
      if (known) return known;
      throw new Error('the secret store is sealed and this site has no key pair yet: unseal (or init) it to sync');
    }
    return (publicKey = await loadSiteKey(store, box, settings.site));
  };
  const loadKey = () =>
    siteKey().catch((err: unknown) =>
      log('warn', 'fleet: cannot load this site’s key pair; synced secrets stay closed', {
        error: errorText(err),
      }),
    );
  return {
    role: 'edge-site',
    store: readOnlySynced(store, managed),
    authSettings: (s) => (managed.has(user.keyOf(s.tenant, adminUser)) ? { ...s, adminPassword: undefined } : s),
    userRoutes: () => [],
    siteRoutes: () => [],
    siteState: async () => undefined,
    reads: undefined,
    readyChecks: [
      {
        name: 'fleet-sync',
        // Connected or not, a site that applied a configuration serves it (offline autonomy).
        run: async () =>
          (await store.get(syncRecordKey, { fresh: true }))
            ? undefined
            : `this edge site has never synced from its control plane ${url} (it is trying; see the fleet log lines)`,
      },
    ],
    async attachStrongbox(b) {
      box = b;
      b.onUnseal(async () => void (await loadKey()));
      if (!b.sealed) await loadKey();
    },
    start(hooks) {
      sync = startSiteSync({
        url,
        site: settings.site,
        token,
        ca: f.controlPlaneCa,
        target: storeTarget(store, managed),
        publicKey: siteKey,
        hooks,
        reportIntervalMs: f.reportIntervalMs,
        // Three keep-alives without a bookmark: the link is dead (a half-open TCP connection).
        idleTimeoutMs: 3 * f.keepAliveMs,
        acks: f.acks,
      });
    },
    async close() {
      await sync?.stop();
    },
  };
}

export async function openFleet(settings: Settings, store: Store, opts: FleetOptions = {}): Promise<Fleet> {
  const f = settings.fleet;
  if (f.controlPlaneUrl !== undefined && f.siteToken !== undefined)
    return openEdgeSite(settings, store, f.controlPlaneUrl, f.siteToken);
  const fleetLog: FleetLog = settings.redis ? await openRedisFleetLog(settings.redis) : createEmbeddedFleetLog();
  const relay: FleetRelay = settings.redis ? await openRedisRelay(settings.redis) : createEmbeddedRelay();
  let projector: Projector | undefined;
  /** Projects a site now: after it presented a new key, or after a new token forgot the old one. */
  const reseal = (site: string) => projector?.projectSite(site) ?? Promise.resolve();
  let box: Strongbox | undefined;
  const presence: Presence = createPresence(store, fleetLog);
  const readTimeoutMs = opts.readTimeoutMs ?? siteReadTimeoutMs;
  const rollouts = createRollouts({
    store,
    root: settings.tenant,
    inSync: async (site) => (await presence.fields(site))['in-sync'] === true,
    lastReport: (site) => presence.lastReport(site),
    ...(opts.rolloutTickMs !== undefined ? { tickMs: opts.rolloutTickMs } : {}),
  });
  return {
    role: 'control-plane',
    store,
    authSettings: (s) => s,
    userRoutes: (deps) => [fleetUserRoutes(deps, reseal), rolloutOpRoutes(deps, rollouts)],
    rolloutState: (key) => rollouts.state(key),
    siteRoutes: (deps) => [
      fleetSiteRoutes(deps, {
        fleetLog,
        presence,
        relay,
        keepAliveMs: opts.keepAliveMs ?? f.keepAliveMs,
        reseal,
      }),
    ],
    siteState: (site) => (site === settings.site ? Promise.resolve(undefined) : presence.fields(site)),
    exporterView: createExporterView({
      store,
      root: settings.tenant,
      ownSite: settings.site,
      lastReport: (site) => presence.lastReport(site),
      isConnected: (site) => presence.isConnected(site),
    }),
    reads: {
      ask: async (site, read) =>
        (await presence.isConnected(site)) ? relay.ask(site, read, readTimeoutMs) : undefined,
      lastReport: (site) => presence.lastReport(site),
    },
    metrics: fleetMetricsSource({ store, fleetLog, root: settings.tenant, ownSite: settings.site }),
    readyChecks: [],
    async attachStrongbox(b) {
      box = b;
    },
    start() {
      projector = startProjector({
        store,
        fleetLog,
        root: settings.tenant,
        ownSite: settings.site,
        historyMs: f.historyMs,
        rollouts,
        ...(box ? { strongbox: box } : {}),
        ...(opts.resyncMs !== undefined ? { resyncMs: opts.resyncMs } : {}),
      });
    },
    async close() {
      // Its sites are shown disconnected at once, not connected until their presence expires.
      await withDeadline(presence.releaseAll(), 1000);
      await projector?.stop();
      await relay.close();
      await fleetLog.close();
    },
  };
}
