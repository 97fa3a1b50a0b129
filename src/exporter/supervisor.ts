/**
 * Keeps the running exporters equal to the configuration (plus placement at this site):
 * an initial load, then a reconcile shortly after every relevant change from any process
 * (store.onChange). Each exporter's inputs (its object, placement, the site's SYS_* values)
 * are fingerprinted; a different fingerprint restarts it keeping the group offsets, a
 * deleted object stops it and destroys its groups, an object placed elsewhere is `stopped`.
 */
import { createHash } from 'node:crypto';
import { noCounts, type Bus } from '../bus/bus.js';
import { tenantBus } from '../bus/tenant-topics.js';
import { canonicalJson, type JsonObject } from '../lib/json.js';
import { log, repeatingLog } from '../lib/log.js';
import type { Store } from '../store/store.js';
import { snapshotReader, type SnapshotReader } from '../store/snapshot.js';
import type { Clock } from '../lib/clock.js';
import { countAs, epochKey, Exporter, exporterEpoch, startAt } from './exporter.js';
import { LagMonitor } from './lag-monitor.js';
import { placeHere } from '../resources/placement.js';
import { deployment } from '../resources/deployment.js';
import { dnsZone } from '../resources/dns-zone.js';
import { policy } from '../resources/policy/index.js';
import { secret } from '../resources/secret.js';
import { settings } from '../resources/settings.js';
import { site } from '../resources/site.js';
import { tenant } from '../resources/tenant.js';
import { user } from '../resources/user.js';
import { vault } from '../resources/vault.js';
import { anyKeyOf } from '../resources/paths.js';
import { webhook } from '../resources/webhook/index.js';
import { readSecretVars, type SecretReader } from './secret-vars.js';
import { attemptsKey } from './attempts.js';
import type { Agent } from 'undici';
import type { AgentPool } from './send.js';
import { clientCertAgent } from './client-cert.js';
import { TokenSource } from './oauth2.js';
import type { ExporterSpec } from '../resources/webhook/spec.js';
import { specOf } from '../resources/webhook/compiled.js';
import { ExporterState } from './state.js';
import { startControls, type RunControls } from './controls.js';
import { loadSiteContext, type SiteContext } from './system-vars.js';
import { errorText } from '../lib/error-text.js';

export type SupervisorOptions = {
  /** The runtime's HTTP agents. */
  agents: AgentPool;
  site: string;
  /** The root tenant (only its exporters read system: topics). */
  rootTenant: string;
  globalDomain: string;
  store: Store;
  bus: Bus;
  secrets: SecretReader | undefined;
  clock: Clock;
  attemptTimeoutMs: number;
  pollMs: number;
  /** Per exporter, what to tell of each delivered message's latency in seconds (metrics). */
  deliveryObserver?: (tenant: string, name: string) => (seconds: number) => void;
  /** The consumer name of this process in every group (one per process). */
  consumer: string;
  /** The state this site published for the exporter before, if any (its counters are kept). */
  loadSaved?: (tenant: string, name: string) => Promise<unknown>;
};

type Slot = {
  tenant: string;
  name: string;
  fingerprint: string;
  state: ExporterState;
  exporter: Exporter | undefined;
  spec: ExporterSpec | undefined;
  /** Set when the exporter could not start because of its secrets: retried periodically. */
  secretError: boolean;
  /**
   * When the secrets were read but unusable (a client certificate whose key does not match):
   * a digest of those values, so the retry waits for them to change.
   */
  unusableSecrets?: string | undefined;
  /** The running exporter's secret values, updated in place when a secret changes. */
  secrets: Map<string, string>;
  /** While paused or in error for its secrets: the real backlog of its topics (nothing reads them). */
  pausedLag: LagMonitor | undefined;
};

/** A digest of secret values (kept instead of the values to tell whether they changed). */
function digestOf(values: ReadonlyMap<string, string>): string {
  const h = createHash('sha256');
  for (const [k, v] of [...values].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
    h.update(k).update('\0').update(v).update('\0');
  return h.digest('hex');
}

/** The resources whose objects change what runs here (every one but applications). */
/** Keys whose change may change what runs here (one regex: it is asked of every changed key). */
const isRelevant = anyKeyOf([webhook, site, deployment, settings, dnsZone, user, policy, tenant, vault, secret]);
const updateDeadlineMs = 2000;

export const groupName = (tenant: string, name: string): string => `edgeplane:${tenant}:${name}`;
const constant =
  <T>(v: T): (() => T) =>
  () =>
    v;
const slotId = (tenant: string, name: string): string => `${tenant}/${name}`;

export class Supervisor {
  readonly slots = new Map<string, Slot>();
  private readonly forced = new Set<string>();
  private running: Promise<void> = Promise.resolve();
  private queued: Promise<void> | undefined;
  /**
   * While the store is unreachable every reconcile fails (the safety one every 30 s, and at each
   * change): logged as that starts, then every 5 minutes (the Redis client logs the outage itself).
   */
  private readonly failedLog = repeatingLog(300_000);
  private closed = false;
  private readonly snapshots: SnapshotReader;
  /** The exporters' keys in the last snapshot read (kept from each read's changed keys). */
  private readonly webhookKeys = new Set<string>();

  private readonly buses = new Map<string, Bus>();

  constructor(private readonly o: SupervisorOptions) {
    this.snapshots = snapshotReader(o.store);
  }

  /** The tenant's own view of the bus: its exporters reach only its topics. */
  private busOf(tenant: string): Bus {
    let b = this.buses.get(tenant);
    if (!b) this.buses.set(tenant, (b = tenantBus(this.o.bus, tenant, this.o.rootTenant)));
    return b;
  }

  /** Runs a reconcile after the current one; calls made meanwhile share one run. */
  reconcile(): Promise<void> {
    if (this.queued) return this.queued;
    this.queued = this.running
      .then(() => {
        this.queued = undefined;
        return this.closed ? undefined : this.reconcileNow().then(() => this.failedLog.ended());
      })
      .catch((err: unknown) => this.failedLog('error', 'supervisor: reconcile failed', { error: errorText(err) }));
    this.running = this.queued;
    return this.queued;
  }

  onStoreChange(keys: string[]): void {
    // Another site's object (a control plane holds a fleet of them) places nothing here.
    const concerns = (k: string) => isRelevant(k) && (site.parseKey(k)?.name ?? this.o.site) === this.o.site;
    if (keys.some(concerns)) void this.reconcile();
  }

  /** Re-reads configuration and secrets of one exporter, keeping offsets. False when unknown. */
  /** Restarts the exporter; false when it does not run here (no such object, or placed on other sites). */
  async restart(tenant: string, name: string): Promise<boolean> {
    const entry = await this.o.store.get(webhook.keyOf(tenant, name));
    if (!entry) return false;
    const id = slotId(tenant, name);
    // Placed elsewhere: nothing to restart (a forced pass would only move its start-time).
    if (this.slots.get(id)?.state.status === 'stopped') return false;
    this.forced.add(id);
    await this.reconcile();
    return this.slots.get(id)?.state.status !== 'stopped';
  }

  /**
   * Rewind (delivery controls): stops the exporter when it runs here, lets `apply` move its
   * groups, and starts it again. `apply` gets the topics the running exporter read. False (and
   * nothing moved) when it is placed on other sites: its groups here are not the ones it reads.
   */
  async rewind(tenant: string, name: string, apply: (running: string[]) => Promise<void>): Promise<boolean> {
    const id = slotId(tenant, name);
    const slot = this.slots.get(id);
    if (slot?.state.status === 'stopped') return false;
    const running = slot?.exporter?.topics() ?? [];
    if (slot?.exporter) {
      await slot.exporter.stop(updateDeadlineMs);
      slot.exporter = undefined;
    }
    try {
      await apply(running);
    } finally {
      if (slot) {
        this.forced.add(id);
        await this.reconcile();
      }
    }
    return true;
  }

  /**
   * Exporters in `error` for a secret start again once their secrets can be read: they are
   * read first, so one still failing stays as it is (its status and the log unchanged: a
   * restart every 5 s logged two status changes each time).
   */
  async retrySecretErrors(): Promise<void> {
    let any = false;
    for (const [id, s] of this.slots) {
      if (!s.secretError) continue;
      const still = s.spec ? await readSecretVars(this.o.secrets, s.spec.secretVars) : undefined;
      if (still && !still.ok && still.error === s.state.lastError) continue;
      if (still?.ok && s.unusableSecrets !== undefined && digestOf(still.values) === s.unusableSecrets) continue;
      this.forced.add(id);
      any = true;
    }
    if (any) await this.reconcile();
  }

  private async reconcileNow(): Promise<void> {
    // Only what changed since the last reconcile is read again (store/snapshot.ts).
    const snap = await this.snapshots.read();
    let all: Iterable<{ key: string; value: JsonObject; etag: string }>;
    if (snap) {
      // Only a key the read found changed can have become, or stopped being, an exporter's: a
      // control plane's configuration is mostly sites, not walked again after every commit.
      for (const key of snap.changed)
        if (snap.values.has(key) && webhook.parseKey(key)) this.webhookKeys.add(key);
        else this.webhookKeys.delete(key);
      all = [...this.webhookKeys].map((key) => ({ key, value: snap.values.get(key)!, etag: snap.etags.get(key)! }));
    } else {
      all = await this.o.store.list('');
      this.webhookKeys.clear();
      for (const e of all) if (webhook.parseKey(e.key)) this.webhookKeys.add(e.key);
    }
    const desired = new Map<string, { tenant: string; name: string; cfg: JsonObject; etag: string }>();
    for (const e of all) {
      const w = webhook.parseKey(e.key);
      if (w) desired.set(slotId(w.tenant, w.name!), { tenant: w.tenant, name: w.name!, cfg: e.value, etag: e.etag });
    }
    const contexts = new Map<string, { ctx: SiteContext; text: string }>();
    for (const { tenant } of desired.values()) {
      if (contexts.has(tenant)) continue;
      const ctx = await loadSiteContext(this.o.store, tenant, this.o.site, this.o.globalDomain);
      contexts.set(tenant, { ctx, text: canonicalJson([...ctx.vars]) });
    }
    const changes: Array<() => Promise<void>> = [];
    for (const [id, d] of desired) {
      const { ctx, text } = contexts.get(d.tenant)!;
      // The ETag stands for the object's content, so no re-serialisation of every object.
      const fingerprint = `${d.etag}|${JSON.stringify(placeHere(d.cfg['site-placement'], ctx))}|${text}`;
      const slot = this.slots.get(id);
      if (slot && slot.fingerprint === fingerprint && !this.forced.has(id)) {
        if (slot.exporter && slot.spec && slot.spec.secretVars.length > 0)
          changes.push(() => this.refreshSecrets(slot));
        continue;
      }
      this.forced.delete(id);
      changes.push(() => this.replace(id, slot, d, ctx, fingerprint));
    }
    for (const [id, slot] of this.slots) if (!desired.has(id)) changes.push(() => this.remove(id, slot));
    // Bounded parallelism: a change to a site can restart every exporter of a tenant.
    for (let i = 0; i < changes.length; i += 50) await Promise.all(changes.slice(i, i + 50).map((c) => c()));
  }

  private async replace(
    id: string,
    old: Slot | undefined,
    { tenant, name, cfg, etag }: { tenant: string; name: string; cfg: JsonObject; etag: string },
    ctx: SiteContext,
    fingerprint: string,
  ): Promise<void> {
    const oldTopics = old?.exporter?.topics() ?? [];
    if (old?.exporter) await old.exporter.stop(updateDeadlineMs);
    old?.pausedLag?.stop();
    let state = old?.state;
    if (!state) {
      state = new ExporterState(this.o.clock.now(), { tenant, exporter: name });
      state.restoreCounters(await this.o.loadSaved?.(tenant, name));
    }
    state.setStatus('starting', this.o.clock.now());
    const slot: Slot = {
      tenant,
      name,
      fingerprint,
      state,
      exporter: undefined,
      spec: undefined,
      secretError: false,
      secrets: new Map(),
      pausedLag: undefined,
    };
    this.slots.set(id, slot);
    if (this.closed) return;

    let spec: ExporterSpec;
    try {
      // Compiled at write time when this process committed this revision; else compiled now.
      spec = specOf(webhook.keyOf(tenant, name), etag, tenant, cfg, this.o.rootTenant);
    } catch (err) {
      state.error(`invalid configuration: ${errorText(err)}`, this.o.clock.now());
      state.setStatus('error');
      return;
    }
    slot.spec = spec;
    // Groups of topics this exporter no longer consumes are destroyed, like a deletion.
    for (const t of oldTopics) {
      if (!spec.topics.includes(t) && !(spec.topicAllowed(t) && spec.patterns.some((p) => p.test(t)))) {
        await this.busOf(tenant).destroyGroup(t, groupName(tenant, name));
        state.removeTopic(t);
      }
    }
    const placement = placeHere(cfg['site-placement'], ctx);
    if (cfg.enabled === false && placement.placed === true) return this.pause(slot, spec);
    if (placement.placed !== true) {
      if (placement.placed === 'invalid') {
        state.error(`invalid configuration: ${placement.reason}`, this.o.clock.now());
        state.setStatus('error');
      } else state.setStatus('stopped');
      return;
    }
    await this.run(slot, spec, ctx);
  }

  /**
   * Delivery controls: `enabled: false` pauses; the groups (offsets) are kept as they are. An
   * exporter created paused gets its groups now, at its start-position: what is produced while
   * it is paused waits for it (and shows as lag), as for one paused after it ran.
   */
  private async pause(slot: Slot, spec: ExporterSpec): Promise<void> {
    slot.state.setStatus('paused');
    await this.holdPosition(slot, spec);
  }

  /**
   * An exporter that does not run here (paused, or in `error` for its secrets): its groups are
   * made at its start-position unless they exist, so what is produced meanwhile waits for it,
   * and their backlog shows in `topic-lag`.
   */
  private async holdPosition(slot: Slot, spec: ExporterSpec): Promise<void> {
    const { tenant, name, state } = slot;
    const bus = this.busOf(tenant);
    const group = groupName(tenant, name);
    // Topics of its patterns that exist now are held as its named ones (later ones are read whole).
    const matched =
      spec.patterns.length === 0
        ? []
        : (await bus.listTopics().catch(() => [])).filter(
            (t) => spec.topicAllowed(t) && spec.patterns.some((p) => p.test(t)),
          );
    // The topics it consumed keep showing their backlog, which grows while it is paused.
    const topics = new Set([...state.consumedTopics(), ...spec.topics, ...matched]);
    const start = startAt(spec, await exporterEpoch(this.o.store, tenant, name, Date.now()));
    for (const t of topics) {
      // An existing group keeps its position; a failure leaves it to the start (as before).
      await bus.ensureGroup(t, group, start).catch(() => undefined);
      state.addTopic(t);
      state.setTopicCounts(t, await bus.counts(t, countAs(group, this.o.site)).catch(() => noCounts()));
    }
    slot.pausedLag = new LagMonitor(bus, group, state, () => topics, true).start();
  }

  /** Secrets, controls and the HTTP agent of a placed exporter, then the exporter itself. */
  private async run(slot: Slot, spec: ExporterSpec, ctx: SiteContext): Promise<void> {
    const { tenant, name, state } = slot;
    const secrets = await readSecretVars(this.o.secrets, spec.secretVars);
    if (!secrets.ok) {
      slot.secretError = true;
      state.error(secrets.error, this.o.clock.now());
      state.setStatus('error');
      await this.holdPosition(slot, spec);
      return;
    }
    slot.secrets = secrets.values;
    // Delivery controls: signing key, dead-letter topic, attempt log, breakers, adaptive limit.
    let controls: RunControls;
    try {
      controls = startControls({
        spec,
        bus: this.busOf(tenant),
        store: this.o.store,
        clock: this.o.clock,
        state,
        secrets: slot.secrets,
        site: this.o.site,
      });
    } catch (err) {
      state.error(errorText(err), this.o.clock.now());
      state.setStatus('error');
      return;
    }
    let agent: () => Agent;
    try {
      agent = spec.ext.clientCert
        ? clientCertAgent({
            pool: this.o.agents,
            tls: spec.tls,
            attemptTimeoutMs: this.o.attemptTimeoutMs,
            secrets: slot.secrets,
            state,
            clock: this.o.clock,
          })
        : constant(this.o.agents.agentFor(spec.tls, this.o.attemptTimeoutMs));
    } catch (err) {
      await controls.close();
      // Retried with the secret store's errors (retrySecretErrors) once the values change.
      slot.secretError = true;
      slot.unusableSecrets = digestOf(slot.secrets);
      state.error(err instanceof Error ? err.message : String(err), this.o.clock.now());
      state.setStatus('error');
      await this.holdPosition(slot, spec);
      return;
    }
    const epochMs = await exporterEpoch(this.o.store, tenant, name, Date.now());
    const exporter = new Exporter({
      spec,
      epochMs,
      bus: this.busOf(tenant),
      clock: this.o.clock,
      agent,
      oauth: spec.ext.oauth2 ? new TokenSource(spec.ext.oauth2, slot.secrets, agent, this.o.clock) : undefined,
      group: groupName(tenant, name),
      site: this.o.site,
      consumer: this.o.consumer,
      sys: ctx.vars,
      secrets: slot.secrets,
      state,
      pollMs: this.o.pollMs,
      ...(this.o.deliveryObserver ? { observeDelivery: this.o.deliveryObserver(tenant, name) } : {}),
      controls,
    });
    slot.exporter = exporter;
    exporter.start();
    log('info', 'exporter started', { tenant, exporter: name, topics: spec.topics });
  }

  /**
   * A vault secret may have changed (any change under strongbox runs a reconcile): the running
   * exporter sends the new values from its next message on, without a restart. A secret that
   * cannot be read any more keeps the last values and is reported as the last error.
   */
  private async refreshSecrets(slot: Slot): Promise<void> {
    const read = await readSecretVars(this.o.secrets, slot.spec?.secretVars ?? []);
    if (!read.ok) {
      slot.state.error(read.error, this.o.clock.now());
      return;
    }
    for (const [k, v] of read.values) slot.secrets.set(k, v);
  }

  private async remove(id: string, slot: Slot): Promise<void> {
    this.slots.delete(id);
    slot.pausedLag?.stop();
    const topics = new Set([...(slot.exporter?.topics() ?? []), ...(slot.spec?.topics ?? [])]);
    if (slot.exporter) await slot.exporter.stop(updateDeadlineMs);
    for (const t of topics) await this.busOf(slot.tenant).destroyGroup(t, groupName(slot.tenant, slot.name));
    // Its attempt log and first start go with it: an exporter created again under its name starts anew.
    await this.o.store.kvDel(attemptsKey(slot.tenant, slot.name)).catch(() => undefined);
    await this.o.store.kvDel(epochKey(slot.tenant, slot.name)).catch(() => undefined);
    log('info', 'exporter removed', { tenant: slot.tenant, exporter: slot.name });
  }

  /** Lets every running exporter take over the pending entries of dead consumers. */
  async claimDead(dead: readonly string[], minIdleMs: number): Promise<void> {
    const running = [...this.slots.values()].flatMap((s) => (s.exporter ? [s.exporter] : []));
    for (let i = 0; i < running.length; i += 50)
      await Promise.all(running.slice(i, i + 50).map((e) => e.claimDead(dead, minIdleMs)));
  }

  async stop(deadlineMs: number): Promise<void> {
    this.closed = true;
    await this.running;
    await Promise.all(
      [...this.slots.values()].map(async (s) => {
        if (s.exporter) await s.exporter.stop(deadlineMs);
        s.exporter = undefined;
        s.pausedLag?.stop();
        s.state.setStatus('stopped');
      }),
    );
  }
}
