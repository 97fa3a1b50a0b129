/**
 * The message loop of one running exporter. It reads batches from each consumed topic
 * (non-blocking, on the bus's shared connection) and handles up to `max-in-flight`
 * messages at once, in topic order: with 1, strictly one after the other. When every topic
 * is drained it sleeps until the bus notifier wakes it (a topic got entries) or a slow
 * safety poll fires. Each message is acked once handled; see bus.ts for why acking each
 * handled message is the "offset moves only past handled messages" rule.
 */
import { setMaxListeners } from 'node:events';
import type { Agent } from 'undici';
import type { Bus, StartAt } from '../bus/bus.js';
import { log } from '../lib/log.js';
import type { Clock } from '../lib/clock.js';
import { deliver, orderingKeyOf, type DeliverContext } from './deliver.js';
import { KeyQueues } from './ordering.js';
import type { TokenSource } from './oauth2.js';
import { Message } from './message.js';
import type { ExporterSpec } from '../resources/webhook/spec.js';
import type { RunControls } from './controls.js';
import type { ExporterState } from './state.js';
import { TopicReader } from './topic-reader.js';
import { LagMonitor } from './lag-monitor.js';
import { errorText } from '../lib/error-text.js';

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
  /** oauth2 (CONTRACT §12): the exporter's access tokens. */
  oauth?: TokenSource | undefined;
};

const realSleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function startAt(spec: ExporterSpec): StartAt {
  return spec.start === 'end' ? { at: 'end' } : { at: 'beginning' };
}

/** The counter name of an exporter's outcomes at a site (bus.ts AckCount). */
export const countAs = (group: string, site: string): string => `${group}|${site}`;

export class Exporter {
  private readonly readers = new Map<string, TopicReader>();
  private readonly opening = new Set<string>();
  private readonly cleanups: Array<() => void> = [];
  private readonly stopCtl = new AbortController();
  /** Set at the stop deadline: POSTs still running then are left to finish unacked. */
  private abandoned = false;
  private readonly ctx: DeliverContext;
  private dirty = true;
  private wakeLoop: (() => void) | undefined;
  private inFlight = 0;
  private slotFreed: (() => void) | undefined;
  private loop: Promise<void> | undefined;
  private readonly lag: LagMonitor;
  /** ordering-key: the messages waiting behind a busy key. */
  private readonly keys: KeyQueues<{ reader: TopicReader; msg: Message }> | undefined;

  constructor(private readonly d: ExporterDeps) {
    // Every retry wait listens on this signal.
    setMaxListeners(0, this.stopCtl.signal);
    this.keys = d.spec.ext.orderingKey ? new KeyQueues() : undefined;
    this.lag = new LagMonitor(d.bus, d.group, d.state, () => this.readers.keys());
    this.ctx = {
      spec: d.spec,
      agent: d.agent,
      clock: d.clock,
      sys: d.sys,
      secrets: d.secrets,
      state: d.state,
      stopping: this.stopCtl.signal,
      controls: d.controls,
      oauth: d.oauth,
      park: this.park,
      unpark: this.unpark,
    };
  }

  /** The in-flight bound: fixed, or the adaptive limit with max-in-flight auto (delivery controls). */
  private limit(): number {
    return this.d.controls.limiter?.limit ?? this.d.spec.maxInFlight;
  }

  /**
   * Delivery controls: a message waiting for an open circuit breaker gives its slot up (when
   * max-in-flight is above 1), so messages to other origins go on (up to 1000 or 16 × max-in-flight waiting messages); it takes a slot
   * again before its attempt.
   */
  private parked = 0;
  private park = (): boolean => {
    // At max-in-flight 1 order is strict: the waiting message keeps its slot, nothing overtakes it.
    if (this.limit() <= 1 || this.parked >= Math.max(1000, 16 * this.d.spec.maxInFlight)) return false;
    this.parked++;
    this.inFlight--;
    this.d.state.inFlight = this.inFlight;
    this.freeSlot();
    return true;
  };
  private unpark = async (): Promise<void> => {
    this.parked--;
    while (this.inFlight >= this.limit() && !this.stopCtl.signal.aborted) await this.waitSlot();
    this.inFlight++;
    this.d.state.inFlight = this.inFlight;
  };

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

  private async addTopic(topic: string, start: StartAt): Promise<void> {
    if (this.readers.has(topic) || this.opening.has(topic)) return;
    this.opening.add(topic);
    const reader = new TopicReader(
      this.d.bus,
      topic,
      this.d.group,
      this.d.consumer,
      start,
      countAs(this.d.group, this.d.site),
      (t, counts) => this.d.state.setTopicCounts(t, counts),
    );
    try {
      for (;;) {
        if (this.stopCtl.signal.aborted) return;
        try {
          await reader.open();
          break;
        } catch (err) {
          this.d.state.error(`cannot open topic ${topic}: ${errorText(err)}`, this.d.clock.now());
          await realSleep(1000);
        }
      }
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
    await Promise.all(spec.topics.map((t) => this.addTopic(t, startAt(spec))));
    if (spec.patterns.length > 0) {
      let first = true;
      this.cleanups.push(
        this.d.bus.onTopics((all) => {
          // Topics that appear after the start hold only messages produced since: read them whole.
          const start = first ? startAt(spec) : { at: 'beginning' as const };
          first = false;
          for (const t of all)
            if (spec.topicAllowed(t) && spec.patterns.some((p) => p.test(t))) void this.addTopic(t, start);
        }),
      );
    }
    if (this.stopCtl.signal.aborted) return;
    state.setStatus('ready');
    const count = Math.min(1024, Math.max(256, spec.maxInFlight * 4));
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
          this.wakeLoop = () => {
            clearTimeout(timer);
            resolve();
          };
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
      batch = await reader.read(count);
    } catch (err) {
      log('debug', 'exporter: read failed', { exporter: this.d.spec.name, topic: reader.topic, error: errorText(err) });
      state.error(`cannot read topic ${reader.topic}: ${errorText(err)}`, this.d.clock.now());
      await realSleep(500);
      return 0;
    }
    const n = batch.entries.length;
    if (n === 0) return 0;
    this.lag.stale();
    const lagAfter = batch.lag ?? 0;
    for (let i = 0; i < n; i++) {
      // Awaited only when full: an await per message costs a turn of the microtask queue.
      if (this.inFlight >= this.limit()) await this.slot();
      // Entries not dispatched stay in our pending list and are read again at the next start.
      if (this.stopCtl.signal.aborted) break;
      const msg = new Message(reader.topic, batch.entries[i]!, n - 1 - i + lagAfter);
      if (this.keys) {
        const key = orderingKeyOf(this.ctx, msg);
        if (!this.keys.admit(key, { reader, msg })) {
          // Waiting behind its key without a slot; the number waiting is bounded.
          while (this.keys.waiting > this.maxWaiting() && !this.stopCtl.signal.aborted) await this.waitSlot();
          continue;
        }
        void this.handle(reader, msg, key);
      } else void this.handle(reader, msg);
    }
    return n;
  }

  /** ordering-key: messages read and waiting behind their key, at most this many. */
  private maxWaiting(): number {
    return Math.max(1000, 16 * this.d.spec.maxInFlight);
  }

  private async slot(): Promise<void> {
    while (this.inFlight >= this.limit() && !this.stopCtl.signal.aborted) await this.waitSlot();
  }

  private readonly slotWaiters: Array<() => void> = [];
  private waitSlot(): Promise<void> {
    return new Promise<void>((resolve) => {
      if (this.slotFreed) this.slotWaiters.push(resolve);
      else this.slotFreed = resolve;
    });
  }

  private freeSlot(): void {
    const freed = this.slotFreed;
    this.slotFreed = this.slotWaiters.shift();
    freed?.();
  }

  private async handle(reader: TopicReader, msg: Message, key?: string): Promise<void> {
    const { state } = this.d;
    this.inFlight++;
    state.inFlight = this.inFlight;
    const started = this.d.observeDelivery ? this.d.clock.now() : 0;
    this.d.controls.limiter?.started(this.inFlight);
    try {
      const outcome = await deliver(this.ctx, msg).catch((err: unknown) => {
        state.error(`message ${msg.entry.id} ignored: ${errorText(err)}`, this.d.clock.now());
        return 'ignored' as const;
      });
      if (outcome !== 'aborted' && !this.abandoned) {
        // Counted by the bus with the ack (exact across a kill -9); the state follows its totals.
        reader.handled(msg.entry.id, outcome);
        if (outcome === 'delivered') this.d.observeDelivery?.((this.d.clock.now() - started) / 1000);
      }
    } finally {
      this.inFlight--;
      // ordering-key: the next message of this key takes over the slot (handle counts it again).
      const next = key !== undefined && !this.stopCtl.signal.aborted ? this.keys?.next(key) : undefined;
      if (next) void this.handle(next.reader, next.msg, key);
      state.inFlight = this.inFlight;
      state.version++;
      this.freeSlot();
      if (this.inFlight === 0 && this.parked === 0) this.idle?.();
    }
  }

  private idle: (() => void) | undefined;

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
    this.keys?.clear();
    this.lag.stop();
    for (const c of this.cleanups) c();
    this.wakeLoop?.();
    while (this.slotFreed) this.freeSlot();
    this.d.controls.breakers.close();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, deadlineMs);
    });
    const idle = async () => {
      while (this.inFlight > 0 || this.parked > 0)
        await new Promise<void>((resolve) => {
          this.idle = resolve;
        });
    };
    await Promise.race([Promise.all([this.loop, idle()]), deadline]);
    // Past the deadline a running POST is not waited for and its message is not acked: it
    // stays pending and is read again by the next start (at-least-once).
    this.abandoned = true;
    clearTimeout(timer);
    // Acks get their own short bound: they matter most, and Redis may be gone.
    let ackTimer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all([...this.readers.values()].map((r) => r.flush())),
      new Promise<void>((resolve) => {
        ackTimer = setTimeout(resolve, 1000);
      }),
    ]);
    clearTimeout(ackTimer);
    await this.d.controls.close();
  }
}
