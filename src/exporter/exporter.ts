/**
 * The message loop of one running exporter. It reads batches from each consumed topic
 * (non-blocking, on the bus's shared connection) and handles up to `max-in-flight`
 * messages at once, in topic order: with 1, strictly one after the other. When every topic
 * is drained it sleeps until the bus notifier wakes it (a topic got entries) or a slow
 * safety poll fires. Each message is acked once handled; see bus.ts for why acking each
 * handled message is the "offset moves only past handled messages" rule.
 */
import { setMaxListeners } from 'node:events';
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Agent } from 'undici';
import type { Bus, GroupRead, GroupStart } from '../bus/bus.js';
import type { Store } from '../store/store.js';
import { log } from '../lib/log.js';
import type { Clock } from '../lib/clock.js';
import type { DeliverContext } from './deliver.js';
import { Dispatcher } from './dispatch.js';
import type { TokenSource } from './oauth2.js';
import { Message } from './message.js';
import type { ExporterSpec } from '../resources/webhook/spec.js';
import type { RunControls } from './controls.js';
import type { ExporterState } from './state.js';
import { TopicReader } from './topic-reader.js';
import { LagMonitor } from './lag-monitor.js';
import { errorText } from '../lib/error-text.js';
import { withDeadline } from '../lib/deadline.js';

export type ExporterDeps = {
  spec: ExporterSpec;
  bus: Bus;
  clock: Clock;
  /** The Agent of the next attempt (mutual TLS: the client certificate held now). */
  agent: () => Agent;
  group: string;
  /** The site of this process: its counts are its own (bus.ts AckCount). */
  site: string;
  consumer: string;
  sys: ReadonlyMap<string, string>;
  secrets: ReadonlyMap<string, string>;
  state: ExporterState;
  pollMs: number;
  /** Told the seconds from dispatch to delivery (retries included) of each delivered message. */
  observeDelivery?: (seconds: number) => void;
  controls: RunControls;
  /** When the exporter first ran at this store (exporterEpoch); undefined when the store did not say. */
  epochMs?: number | undefined;
  /** oauth2 (CONTRACT §12): the exporter's access tokens. */
  oauth?: TokenSource | undefined;
};

const realSleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Where a new group of the exporter starts (start-position). `epochMs`: when the exporter first
 * ran at this store. With `end`, a topic made since then is read from its beginning (every
 * entry in it is newer than the exporter), whenever it is found: while running, or at a start
 * after it was paused, stopped or its process down; in an older one, what was produced since
 * then. Without an
 * epoch (the store did not answer) a topic's group starts at its end.
 */
export function startAt(spec: ExporterSpec, epochMs?: number): GroupStart {
  if (spec.start !== 'end') return { at: 'beginning' };
  return epochMs === undefined ? { at: 'end' } : { at: 'since', ms: epochMs };
}

/** `epoch:webhook:<tenant>/<name>` → when the exporter first ran at this store (ms). */
export const epochKey = (tenant: string, name: string): string => `epoch:webhook:${tenant}/${name}`;

/**
 * When the exporter first ran at this store (recorded at that first start as `now`, wall-clock
 * time: it is compared with stream entry IDs); undefined when the store cannot answer.
 */
export async function exporterEpoch(
  store: Store,
  tenant: string,
  name: string,
  now: number,
): Promise<number | undefined> {
  try {
    const v = await store.kvGet(epochKey(tenant, name));
    if (v !== undefined && Number.isFinite(Number(v))) return Number(v);
    await store.kvSet(epochKey(tenant, name), String(now));
    return now;
  } catch {
    return undefined;
  }
}

/** The counter name of an exporter's outcomes at a site (bus.ts AckCount). */
export const countAs = (group: string, site: string): string => `${group}|${site}`;

/** Opens a topic's reader, trying again every second until it opens or the exporter stops. */
async function openReader(d: ExporterDeps, topic: string, start: GroupStart, stopping: AbortSignal) {
  const reader = new TopicReader(d.bus, topic, d.group, d.consumer, start, countAs(d.group, d.site), (t, counts) =>
    d.state.setTopicCounts(t, counts),
  );
  while (!stopping.aborted) {
    try {
      await reader.open();
      return reader;
    } catch (err) {
      d.state.error(`cannot open topic ${topic}: ${errorText(err)}`, d.clock.now());
      await realSleep(1000);
    }
  }
  return undefined;
}

export class Exporter {
  private readonly readers = new Map<string, TopicReader>();
  private readonly opening = new Set<string>();
  private readonly cleanups: Array<() => void> = [];
  private readonly stopCtl = new AbortController();
  private readonly dispatcher: Dispatcher;
  private dirty = true;
  private wakeLoop: (() => void) | undefined;
  private loop: Promise<void> | undefined;
  private readonly lag: LagMonitor;
  /** Per topic, the read started while the entries of the one before were dispatched. */
  private readonly readsAhead = new Map<TopicReader, Promise<GroupRead>>();

  constructor(private readonly d: ExporterDeps) {
    // Every retry wait listens on this signal.
    setMaxListeners(0, this.stopCtl.signal);
    this.lag = new LagMonitor(d.bus, d.group, d.state, () => this.readers.keys());
    const ctx: DeliverContext = {
      ...d,
      stopping: this.stopCtl.signal,
      park: () => this.dispatcher.runner.park(),
      unpark: () => this.dispatcher.runner.unpark(),
    };
    // The in-flight bound: fixed, or the adaptive limit with max-in-flight auto (delivery controls).
    const limit = () => d.controls.limiter?.limit ?? d.spec.maxInFlight;
    this.dispatcher = new Dispatcher(ctx, d.spec, limit, d.observeDelivery);
  }

  /** Topics this exporter reads now (named ones and those found by topic-patterns). */
  topics(): string[] {
    return [...this.readers.keys()];
  }

  start(): void {
    this.lag.start();
    this.loop = this.run().catch((err: unknown) => {
      this.d.state.error(`exporter stopped unexpectedly: ${errorText(err)}`, this.d.clock.now());
      this.d.state.setStatus('error');
    });
  }

  private wake = (): void => {
    this.dirty = true;
    this.wakeLoop?.();
  };

  private async addTopic(topic: string, start: GroupStart): Promise<void> {
    if (this.readers.has(topic) || this.opening.has(topic)) return;
    this.opening.add(topic);
    try {
      const reader = await openReader(this.d, topic, start, this.stopCtl.signal);
      if (!reader) return;
      this.readers.set(topic, reader);
      this.d.state.addTopic(topic);
      this.lag.stale();
      this.cleanups.push(this.d.bus.watch(topic, this.wake));
      this.wake();
    } finally {
      this.opening.delete(topic);
    }
  }

  private async run(): Promise<void> {
    const { spec, state } = this.d;
    await Promise.all(spec.topics.map((t) => this.addTopic(t, startAt(spec, this.d.epochMs))));
    if (spec.patterns.length > 0) {
      let first = true;
      this.cleanups.push(
        this.d.bus.onTopics((all) => {
          // A topic found later is read whole when it was made since the exporter's first start
          // (startAt); without an epoch, those of the first listing start at the start-position.
          const start =
            first || this.d.epochMs !== undefined ? startAt(spec, this.d.epochMs) : { at: 'beginning' as const };
          first = false;
          for (const t of all)
            if (spec.topicAllowed(t) && spec.patterns.some((p) => p.test(t))) void this.addTopic(t, start);
        }),
      );
    }
    if (this.stopCtl.signal.aborted) return;
    state.setStatus('ready');
    // With batch, reads as large as the bound on messages waiting in open batches: fewer reads,
    // and most batches are filled within one read (no max-wait timer started, batch.ts).
    const count = spec.ext.batch ? 1024 : Math.min(1024, Math.max(256, spec.maxInFlight * 4));
    while (!this.stopCtl.signal.aborted) {
      this.dirty = false;
      let got = 0;
      for (const reader of [...this.readers.values()]) {
        if (this.stopCtl.signal.aborted) break;
        got += await this.drainOnce(reader, count);
      }
      if (got === 0 && !this.dirty && !this.stopCtl.signal.aborted) {
        await new Promise<void>((resolve) => {
          // Jittered so a thousand idle exporters do not poll in step.
          const timer = setTimeout(resolve, this.d.pollMs * (0.8 + 0.4 * Math.random()));
          this.wakeLoop = () => (clearTimeout(timer), resolve());
        });
        this.wakeLoop = undefined;
      }
    }
  }

  /** Reads one batch of a topic and dispatches it; returns how many entries it read. */
  private async drainOnce(reader: TopicReader, count: number): Promise<number> {
    const { state } = this.d;
    let batch;
    try {
      const ahead = this.readsAhead.get(reader);
      this.readsAhead.delete(reader);
      batch = await (ahead ?? reader.read(count));
    } catch (err) {
      log('debug', 'exporter: read failed', { exporter: this.d.spec.name, topic: reader.topic, error: errorText(err) });
      state.error(`cannot read topic ${reader.topic}: ${errorText(err)}`, this.d.clock.now());
      await realSleep(500);
      return 0;
    }
    const n = batch.entries.length;
    if (n === 0) return 0;
    // A full read: more is likely waiting. The next read goes now, while these are dispatched,
    // rather than after them (the slots would empty meanwhile). Nothing read is sent before
    // its turn, and what is read but not sent stays pending (read again after a restart).
    if (n >= count && !this.stopCtl.signal.aborted) {
      const next = reader.read(count);
      // Its failure is dealt with where it is awaited (the next drainOnce), or not at all at a stop.
      next.catch(() => undefined);
      this.readsAhead.set(reader, next);
      // The Redis client writes commands from a setImmediate: one turn here puts the read on
      // the wire now, so Redis serves it while these are dispatched (without it, a dispatch that
      // never waits for a slot, as with batch, sends the read only after dispatching them all).
      await nextTurn();
    }
    this.lag.stale();
    const lagAfter = batch.lag ?? 0;
    const msgs = batch.entries.map((e, i) => new Message(reader.topic, e, n - 1 - i + lagAfter));
    const examined = this.dispatcher.examineAll(msgs);
    for (let i = 0; i < n; i++) {
      if (this.stopCtl.signal.aborted) break;
      const wait = this.dispatcher.dispatch(reader, msgs[i]!, examined?.[i]);
      if (wait) await wait;
    }
    return n;
  }

  /** Takes over what dead consumers left pending on our topics, and delivers it next. */
  async claimDead(dead: readonly string[], minIdleMs: number): Promise<void> {
    let n = 0;
    for (const reader of [...this.readers.values()]) {
      if (this.stopCtl.signal.aborted) return;
      try {
        n += await reader.claimDead(dead, minIdleMs);
      } catch (err) {
        log('debug', 'exporter: claim failed', {
          exporter: this.d.spec.name,
          topic: reader.topic,
          error: errorText(err),
        });
      }
    }
    if (n > 0) this.wake();
  }

  /**
   * Stops reading, lets running POSTs finish until the deadline, acks what was handled.
   * Bounded even when Redis is unreachable (its commands would wait for the reconnect).
   */
  async stop(deadlineMs: number): Promise<void> {
    this.stopCtl.abort();
    this.lag.stop();
    for (const c of this.cleanups) c();
    this.wakeLoop?.();
    this.d.controls.breakers.close();
    await withDeadline(Promise.all([this.loop, this.dispatcher.drain()]), deadlineMs);
    // Past the deadline a running POST is not waited for and its message is not acked: it
    // stays pending and is read again by the next start (at-least-once).
    this.dispatcher.runner.abandon();
    // Acks get their own short bound: they matter most, and Redis may be gone.
    await withDeadline(Promise.all([...this.readers.values()].map((r) => r.flush())), 1000);
    await this.d.controls.close();
  }
}
