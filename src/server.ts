/**
 * Assembles one edgeplane process: settings → store → bus → secret store → auth → app, and
 * (optionally) the exporter runtime. Used by worker.ts, tests and benchmarks.
 */
import type { Hono } from 'hono';
import { buildApp } from './app.js';
import type { AppDeps, AppEnv } from './api/deps.js';
import { auditToBus, createAuth } from './auth/index.js';
import { openBus } from './bus/index.js';
import { isObject } from './json.js';
import { log, setLogLevel } from './log.js';
import { configKey } from './model/keys.js';
import type { Settings } from './settings.js';
import { openStore } from './store/index.js';
import { decryptSecret } from './secrets/secrets.js';
import { Strongbox } from './secrets/strongbox.js';
import type { Runtime } from './exporter/index.js';

export type Instance = {
  app: Hono<AppEnv>;
  deps: AppDeps;
  runtime: Runtime | undefined;
  /** Stops the runtime (finishing in-flight POSTs up to deadlineMs) and closes connections. */
  close(deadlineMs?: number): Promise<void>;
};

export async function createInstance(
  settings: Settings,
  opts: { runtime?: boolean; announce?: (line: string) => void } = {},
): Promise<Instance> {
  setLogLevel(settings.logLevel);
  const store = await openStore(settings);
  if (!settings.redisUrl)
    log('info', `embedded store and bus (no REDIS_URL): data kept in ${settings.dataDir}`, {
      dataDir: settings.dataDir,
    });
  else log('info', 'store and bus on Redis', { redis: settings.redisUrl.replace(/\/\/[^@/]*@/, '//***@') });
  const bus = await openBus(settings);
  const strongbox = new Strongbox(store);
  await strongbox.open(settings);
  const auth = createAuth({
    settings,
    store,
    audit: auditToBus(bus),
    ...(opts.announce ? { announce: opts.announce } : {}),
  });
  await auth.bootstrap();
  let runtime: Runtime | undefined;
  if (opts.runtime !== false) {
    // Loaded only when wanted: an API-only process (tests, fetch handler) skips the runtime.
    const { startRuntime } = await import('./exporter/index.js');
    runtime = await startRuntime({
      settings,
      store,
      bus,
      secrets: {
        sealed: () => strongbox.sealed,
        read: async (owner: string, vault: string, secret: string, fromTenant?: string) => {
          // A parent's vault only when the parent shares it with the owner (auth/tenants.ts).
          const tenant = await auth.tenants.vaultTenant(
            owner,
            fromTenant,
            vault,
            'value-from-vault-secret/from-tenant',
          );
          const key = configKey(tenant, `strongbox/vaults/${vault}/secrets/${secret}`);
          const entry = await store.get(key);
          if (!entry) throw new Error(`secret ${vault}/${secret} does not exist`);
          const plain = decryptSecret(strongbox, key, entry.value);
          const data = isObject(plain.data) ? plain.data : {};
          return Object.fromEntries(
            Object.entries(data).filter((e): e is [string, string] => typeof e[1] === 'string'),
          );
        },
      },
    });
  }
  const deps: AppDeps = { settings, store, strongbox, auth, bus, ...(runtime ? { runtime } : {}) };
  const app = buildApp(deps);
  return {
    app,
    deps,
    runtime,
    async close(deadlineMs = 10_000) {
      await runtime?.stop(deadlineMs);
      auth.close();
      await bus.close();
      await store.close();
    },
  };
}
