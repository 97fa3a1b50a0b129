/**
 * Assembles one edgeplane process: settings → store → bus → secret store → auth → app, and
 * (optionally) the exporter runtime. Used by worker.ts, tests and benchmarks.
 */
import type { Hono } from 'hono';
import { buildApp, type AppInput } from './app.js';
import type { AppEnv } from '../api/deps.js';
import { auditToBus, createAuth, type Auth } from '../auth/index.js';
import { openBus, type Bus } from '../bus/index.js';
import { tenantBus } from '../bus/tenant-topics.js';
import { isObject } from '../lib/json.js';
import { log, setLogLevel } from '../lib/log.js';
import { describeTarget } from '../lib/redis.js';
import type { Settings } from '../lib/settings.js';
import { openStore } from '../store/index.js';
import type { Store } from '../store/store.js';
import { configKey } from '../store/keys.js';
import { decryptSecret } from '../secrets/secrets.js';
import { Strongbox } from '../secrets/strongbox.js';
import type { Runtime } from '../exporter/runtime.js';
import { createMetrics } from '../ops/metrics.js';
import { applyConfigFile, checkConfigFile, readConfigFile } from '../ops/config-file.js';
import { closeWatches } from '../api/watch.js';
import { DeliveredHistory } from '../api/history.js';
import { openFleet, type Fleet } from '../fleet/role.js';
import { siteHooks } from '../api/site-reads.js';
import { secret as secretResource } from '../resources/secret.js';

export type Instance = {
  app: Hono<AppEnv>;
  deps: AppInput;
  runtime: Runtime | undefined;
  /** Stops the runtime (finishing in-flight POSTs up to deadlineMs) and closes connections. */
  close(deadlineMs?: number): Promise<void>;
};

export async function createInstance(
  settings: Settings,
  opts: { runtime?: boolean; announce?: (line: string) => void } = {},
): Promise<Instance> {
  setLogLevel(settings.logLevel);
  // EDGEPLANE_CONFIG read and parsed, then checked, before anything is written that a failed
  // start would leave behind (the admin user, whose generated password only that start prints).
  const configFile = settings.configFile ? readConfigFile(settings.configFile) : undefined;
  const rawStore = await openStore(settings);
  // Fleet hook: at an edge site the rest of the process sees synced objects as read-only.
  const fleet = await openFleet(settings, rawStore);
  const store = fleet.store;
  if (!settings.redis)
    log('info', `embedded store and bus (no REDIS_URL): data kept in ${settings.dataDir}`, {
      dataDir: settings.dataDir,
    });
  else log('info', 'store and bus on Redis', { redis: describeTarget(settings.redis) });
  const bus = await openBus(settings);
  const strongbox = new Strongbox(store);
  await strongbox.open(settings);
  await fleet.attachStrongbox(strongbox);
  if (configFile) await checkConfigFile(configFile, { settings, store, strongbox });
  const auth = await openAuth(settings, fleet, bus, opts.announce);
  const metrics = createMetrics({ enabled: settings.metricsEnabled });
  if (fleet.metrics) metrics.fleet(fleet.metrics);
  if (configFile) {
    // Before the runtime starts, so exporters start from the file's configuration.
    const r = await applyConfigFile(configFile, { settings, store, strongbox, auth, bus });
    log('info', `EDGEPLANE_CONFIG ${settings.configFile}: applied, ${r.changed} of ${r.objects} objects changed`, r);
  }
  let runtime: Runtime | undefined;
  if (opts.runtime !== false) {
    // Loaded only when wanted: an API-only process (tests, fetch handler) skips the runtime.
    const { startRuntime } = await import('../exporter/runtime.js');
    runtime = await startRuntime({
      settings,
      store,
      bus,
      deliveryObserver: metrics.deliveryObserver,
      secrets: { sealed: () => strongbox.sealed, read: vaultReader(store, strongbox, auth) },
    });
  }
  const history = new DeliveredHistory(store, settings.site, runtime).start();
  const deps: AppInput = {
    settings,
    store,
    strongbox,
    auth,
    bus,
    metrics,
    history,
    fleet,
    readyChecks: fleet.readyChecks,
    ...(runtime ? { runtime } : {}),
  };
  const app = buildApp(deps);
  // At an edge site: answer the control plane's site= reads and report this site's state.
  fleet.start(fleet.role === 'edge-site' ? siteHooks(deps) : undefined);
  return {
    app,
    deps,
    runtime,
    async close(deadlineMs = 10_000) {
      closeWatches(store);
      history.stop();
      // The site's sync and reports end first: a report sent while the exporters stop would
      // leave the control plane a last state of a site shutting down, not of one running.
      await fleet.close();
      await runtime?.stop(deadlineMs);
      auth.close();
      await bus.close();
      await store.close();
    },
  };
}

/** Auth over the fleet's store, auditing to the bus; the first admin bootstrapped where it belongs. */
async function openAuth(
  settings: Settings,
  fleet: Fleet,
  bus: Bus,
  announce: ((line: string) => void) | undefined,
): Promise<Auth> {
  const store = fleet.store;
  const auth = createAuth({
    settings: fleet.authSettings(settings),
    store,
    audit: auditToBus(tenantBus(bus, settings.tenant, settings.tenant)),
    ...(announce ? { announce } : {}),
  });
  if (fleet.role === 'edge-site' && fleet.authSettings(settings).adminPassword === undefined) {
    // CONTRACT §7: a site's users are the control plane's once it syncs. A password generated
    // here would be refused then, so none is generated (nor printed as if it worked).
    if (!(await store.get(configKey(settings.tenant, 'system/users/admin'))))
      log(
        'info',
        'edge site: no admin password is generated here; users (admin included) come from the control plane at the first sync (set ADMIN_PASSWORD for a local admin until then)',
      );
  } else await auth.bootstrap();
  return auth;
}

/** How an exporter reads a vault secret's data: its own tenant's, or a parent's that shares it. */
function vaultReader(store: Store, strongbox: Strongbox, auth: Auth) {
  return async (owner: string, vault: string, secret: string, fromTenant?: string): Promise<Record<string, string>> => {
    // A parent's vault only when the parent shares it with the owner (auth/tenants.ts).
    const tenant = await auth.tenants.vaultTenant(owner, fromTenant, vault, 'value-from-vault-secret/from-tenant');
    const key = secretResource.keyOf(tenant, vault, secret);
    const entry = await store.get(key);
    if (!entry) throw new Error(`secret ${vault}/${secret} does not exist`);
    const plain = decryptSecret(strongbox, key, entry.value);
    const data = isObject(plain.data) ? plain.data : {};
    return Object.fromEntries(Object.entries(data).filter((e): e is [string, string] => typeof e[1] === 'string'));
  };
}
