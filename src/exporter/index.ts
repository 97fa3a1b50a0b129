/**
 * The webhook exporter runtime, as the API process starts it:
 * `startRuntime({settings, store, bus, secrets})` loads every webhook object, keeps the
 * running exporters in step with the configuration, and publishes each exporter's state to
 * the store's kv area (`webhookStateKey` of model/keys.ts, every ~500 ms when it
 * changed) so the API of any process can show it. The state carries `site`, the SITE of the
 * process that wrote it; a process where the exporter is placed elsewhere writes `stopped`
 * only over nothing, its own state or another `stopped`.
 */
import type { Bus } from '../bus/bus.js';
import { isObject, type JsonObject } from '../json.js';
import { log } from '../log.js';
import { webhookStateKey } from '../model/keys.js';
import type { Settings } from '../settings.js';
import type { Store } from '../store/store.js';
import { systemClock, type Clock } from './clock.js';
import type { SecretReader } from './secret-vars.js';
import { closeAgents } from './send.js';
import { Supervisor } from './supervisor.js';

export type { SecretReader } from './secret-vars.js';
export type { Clock } from './clock.js';
export { groupName } from './supervisor.js';

export type RuntimeOptions = {
  settings: Pick<Settings, 'site' | 'globalDomain'> & Partial<Pick<Settings, 'tenant'>>;
  store: Store;
  bus: Bus;
  secrets?: SecretReader;
  clock?: Clock;
  /** Header and body timeout of one POST attempt (default 30 s); a hang is a failed attempt. */
  attemptTimeoutMs?: number;
  /** Safety poll of an idle exporter besides the bus notifier (default 30 s). */
  pollMs?: number;
  /** How often changed states are written to the kv area (default 500 ms). */
  publishMs?: number;
};

export type Runtime = {
  /** Stops reading, lets running POSTs finish until the deadline, acks, publishes the states. */
  stop(deadlineMs: number): Promise<void>;
  exporterState(tenant: string, name: string): JsonObject | undefined;
  restart(tenant: string, name: string): Promise<boolean>;
  readonly bus: Bus;
};

export async function startRuntime(opts: RuntimeOptions): Promise<Runtime> {
  const clock = opts.clock ?? systemClock;
  const supervisor = new Supervisor({
    site: opts.settings.site,
    globalDomain: opts.settings.globalDomain,
    rootTenant: opts.settings.tenant ?? 'default',
    store: opts.store,
    bus: opts.bus,
    secrets: opts.secrets,
    clock,
    attemptTimeoutMs: opts.attemptTimeoutMs ?? 30_000,
    pollMs: opts.pollMs ?? 30_000,
  });

  const site = opts.settings.site;
  const withSite = (state: JsonObject): JsonObject => ({ ...state, site });
  const mayOverwrite = async (key: string): Promise<boolean> => {
    const raw = await opts.store.kvGet(key);
    if (raw === undefined) return true;
    try {
      const prev: unknown = JSON.parse(raw);
      return !isObject(prev) || prev.site === site || prev.status === 'stopped';
    } catch {
      return true;
    }
  };
  const published = new Map<string, number>();
  let publishing = false;
  const publish = async (): Promise<void> => {
    if (publishing) return;
    publishing = true;
    try {
      for (const [id, slot] of supervisor.slots) {
        if (published.get(id) === slot.state.version) continue;
        published.set(id, slot.state.version);
        const key = webhookStateKey(slot.tenant, slot.name);
        const state = withSite(slot.state.toJson());
        // Processes of several sites may share one store: "stopped here" must not hide the
        // state written by the site where the exporter runs.
        if (state.status === 'stopped' && !(await mayOverwrite(key))) continue;
        await opts.store.kvSet(key, JSON.stringify(state));
      }
      for (const id of [...published.keys()]) {
        if (supervisor.slots.has(id)) continue;
        published.delete(id);
        const slash = id.indexOf('/');
        await opts.store.kvDel(webhookStateKey(id.slice(0, slash), id.slice(slash + 1)));
      }
    } catch (err) {
      log('debug', 'runtime: cannot publish exporter states', { error: String(err) });
    } finally {
      publishing = false;
    }
  };

  const unsubscribe = opts.store.onChange((keys) => supervisor.onStoreChange(keys));
  await supervisor.reconcile();
  const publisher = setInterval(() => void publish(), opts.publishMs ?? 500);
  const secretRetry = setInterval(() => supervisor.retrySecretErrors(), 5000);
  // Change notifications can be lost while Redis restarts; unchanged exporters are untouched.
  const safety = setInterval(() => void supervisor.reconcile(), 30_000);
  publisher.unref();
  secretRetry.unref();
  safety.unref();
  void publish();
  log('info', 'webhook exporter runtime started', { site: opts.settings.site, exporters: supervisor.slots.size });

  return {
    bus: opts.bus,
    exporterState(tenant, name) {
      const slot = supervisor.slots.get(`${tenant}/${name}`);
      return slot ? withSite(slot.state.toJson()) : undefined;
    },
    restart: (tenant, name) => supervisor.restart(tenant, name),
    async stop(deadlineMs) {
      unsubscribe();
      clearInterval(publisher);
      clearInterval(secretRetry);
      clearInterval(safety);
      await supervisor.stop(deadlineMs);
      await publish();
      await closeAgents();
    },
  };
}
