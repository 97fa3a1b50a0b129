/**
 * The webhook exporter runtime, as the API process starts it:
 * `startRuntime({settings, store, bus, secrets})` loads every webhook object, keeps the
 * running exporters in step with the configuration, and publishes each exporter's state to
 * the store's kv area (`webhookStateKey` of store/keys.ts: one key per exporter and site, every ~500 ms when it
 * changed) so the API of any process of the site can show it, and the counters go on from
 * there after a restart. The state carries `site`, the SITE of the process that wrote it.
 */
import { hostname } from 'node:os';
import type { Bus } from '../bus/bus.js';
import type { JsonObject } from '../lib/json.js';
import { log } from '../lib/log.js';
import { webhookStateKey } from '../store/keys.js';
import type { Settings } from '../lib/settings.js';
import type { Store } from '../store/store.js';
import { systemClock, type Clock } from '../lib/clock.js';
import type { SecretReader } from './secret-vars.js';
import { AgentPool } from './send.js';
import { Supervisor } from './supervisor.js';
import { errorText } from '../lib/error-text.js';
import { withDeadline } from '../lib/deadline.js';

/** At stop, the retirement of the consumer and the last state written wait at most this long each. */
const stopWritesMs = 1000;

export type { SecretReader } from './secret-vars.js';
export type { Clock } from '../lib/clock.js';
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
  /** How often exporters in `error` for a secret (sealed store, missing secret) start again (default 5 s). */
  secretRetryMs?: number;
  /** Per exporter, what to tell of each delivered message's latency in seconds (metrics). */
  deliveryObserver?: (tenant: string, name: string) => (seconds: number) => void;
  /** This process's consumer name in the exporters' groups (default `<SITE>:<host>:<pid>`). */
  consumer?: string;
};

/** Heartbeats of this process's consumer: every second, valid for three. */
const heartbeatMs = 1000;
const heartbeatTtlMs = 3000;
/**
 * Entries of a dead consumer are claimed once idle this long, so that two survivors do not
 * both take them. With the heartbeat ttl, a dead process's pending entries are taken over
 * within about 4 s of its death (5 s at most), wherever they are read.
 */
export const claimMinIdleMs = 2000;

export type Runtime = {
  /** Stops reading, lets running POSTs finish until the deadline, acks, publishes the states. */
  stop(deadlineMs: number): Promise<void>;
  exporterState(tenant: string, name: string): JsonObject | undefined;
  /** The state of every exporter this process keeps (metrics read it when scraped). */
  exporterStates(): Array<{ tenant: string; name: string; state: JsonObject }>;
  restart(tenant: string, name: string): Promise<boolean>;
  /** Calls `listener` after a publication that wrote changed states. */
  onStateChange(listener: () => void): () => void;
  /** Rewind: stops the exporter if it runs here, runs `apply` with the topics it read, starts it again. */
  /** False (nothing moved) when the exporter is placed on other sites than this process's. */
  rewind(tenant: string, name: string, apply: (running: string[]) => Promise<void>): Promise<boolean>;
  readonly bus: Bus;
};

/**
 * Publishes the states of the supervisor's exporters that changed (their `version` moved) to the
 * store's kv area, and removes those of exporters gone; `wrote` is told after a publication
 * that wrote something. One publication at a time.
 */
function statePublisher(store: Store, supervisor: Supervisor, site: string, wrote: () => void): () => Promise<void> {
  const published = new Map<string, number>();
  let publishing = false;
  return async () => {
    if (publishing) return;
    publishing = true;
    let any = false;
    try {
      for (const [id, slot] of supervisor.slots) {
        if (published.get(id) === slot.state.version) continue;
        published.set(id, slot.state.version);
        any = true;
        await store.kvSet(
          webhookStateKey(slot.tenant, slot.name, site),
          JSON.stringify({ ...slot.state.toJson(), site }),
        );
      }
      for (const id of [...published.keys()]) {
        if (supervisor.slots.has(id)) continue;
        published.delete(id);
        any = true;
        const slash = id.indexOf('/');
        await store.kvDel(webhookStateKey(id.slice(0, slash), id.slice(slash + 1), site));
      }
    } catch (err) {
      log('debug', 'runtime: cannot publish exporter states', { error: errorText(err) });
    } finally {
      publishing = false;
      if (any) wrote();
    }
  };
}

/** Every heartbeatMs: this consumer's heartbeat, then what dead consumers left pending is taken over. */
function livenessLoop(bus: Bus, consumer: string, supervisor: Supervisor): NodeJS.Timeout {
  let checking = false;
  const timer = setInterval(() => {
    if (checking) return;
    checking = true;
    void (async () => {
      try {
        await bus.heartbeat(consumer, heartbeatTtlMs);
        const dead = await bus.deadConsumers();
        if (dead.length > 0) await supervisor.claimDead(dead, claimMinIdleMs);
      } catch (err) {
        log('debug', 'runtime: heartbeat or claim failed', { error: errorText(err) });
      } finally {
        checking = false;
      }
    })();
  }, heartbeatMs);
  timer.unref();
  return timer;
}

export async function startRuntime(opts: RuntimeOptions): Promise<Runtime> {
  const clock = opts.clock ?? systemClock;
  const consumer = opts.consumer ?? `${opts.settings.site}:${hostname()}:${process.pid}`;
  // Alive before the first read, so no other process takes our entries for a dead one's.
  await opts.bus.heartbeat(consumer, heartbeatTtlMs);
  // This runtime's HTTP agents: its stop closes these and no other runtime's.
  const agents = new AgentPool();
  const supervisor = new Supervisor({
    agents,
    consumer,
    site: opts.settings.site,
    globalDomain: opts.settings.globalDomain,
    rootTenant: opts.settings.tenant ?? 'default',
    store: opts.store,
    bus: opts.bus,
    secrets: opts.secrets,
    clock,
    attemptTimeoutMs: opts.attemptTimeoutMs ?? 30_000,
    pollMs: opts.pollMs ?? 30_000,
    ...(opts.deliveryObserver ? { deliveryObserver: opts.deliveryObserver } : {}),
    // Counters go on from the state this site published before (a process restart).
    loadSaved: async (tenant, name) => {
      const raw = await opts.store.kvGet(webhookStateKey(tenant, name, opts.settings.site)).catch(() => undefined);
      try {
        return raw === undefined ? undefined : (JSON.parse(raw) as unknown);
      } catch {
        return undefined;
      }
    },
  });

  const site = opts.settings.site;
  const withSite = (state: JsonObject): JsonObject => ({ ...state, site });
  const stateListeners = new Set<() => void>();
  const publish = statePublisher(opts.store, supervisor, site, () => {
    for (const l of stateListeners) l();
  });

  const unsubscribe = opts.store.onChange((keys) => supervisor.onStoreChange(keys));
  await supervisor.reconcile();
  const publisher = setInterval(() => void publish(), opts.publishMs ?? 500);
  const liveness = livenessLoop(opts.bus, consumer, supervisor);
  const secretRetry = setInterval(
    () => void supervisor.retrySecretErrors().catch(() => undefined),
    opts.secretRetryMs ?? 5000,
  );
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
    exporterStates: () =>
      [...supervisor.slots.values()].map((s) => ({ tenant: s.tenant, name: s.name, state: s.state.toJson() })),
    restart: (tenant, name) => supervisor.restart(tenant, name),
    onStateChange(listener) {
      stateListeners.add(listener);
      return () => stateListeners.delete(listener);
    },
    rewind: (tenant, name, apply) => supervisor.rewind(tenant, name, apply),
    async stop(deadlineMs) {
      unsubscribe();
      clearInterval(publisher);
      clearInterval(liveness);
      clearInterval(secretRetry);
      clearInterval(safety);
      await supervisor.stop(deadlineMs);
      // What we leave pending is taken over by the other processes at once. Both write to
      // Redis: bounded, so a stop while Redis is unreachable ends (the bus would queue them).
      await withDeadline(opts.bus.retire(consumer), stopWritesMs);
      await withDeadline(publish(), stopWritesMs);
      await agents.close();
    },
  };
}
