/**
 * What the exporter's loop does with each message it read: hands it to `deliver` in an
 * in-flight slot (slots.ts), behind its key with `ordering-key` (ordering.ts), or gathered into
 * a batch with `batch` (batch.ts), and tells its reader how it was handled (the reader acks
 * it; topic-reader.ts). The loop calls `dispatch` for each message in topic order; it waits
 * there only while every slot is taken (or too many messages wait behind their keys or in open
 * batches), which bounds what is read ahead.
 */
import type { ExporterSpec } from '../resources/webhook/spec.js';
import { errorText } from '../lib/error-text.js';
import { Batch, Batcher } from './batch.js';
import { deliver, orderingKeyOf, post, prepare, type DeliverContext, type Outcome } from './deliver.js';
import type { Message } from './message.js';
import { KeyQueues } from './ordering.js';
import { Slots } from './slots.js';
import type { TopicReader } from './topic-reader.js';

/** One message, or a sealed batch: what takes one slot and one POST. */
type Unit = { reader: TopicReader; msg: Message } | Batch;

export class Dispatcher {
  readonly slots: Slots;
  /** ordering-key: the units waiting behind a busy key. */
  private readonly keys: KeyQueues<Unit> | undefined;
  private readonly batcher: Batcher | undefined;
  /** Messages waiting for an open circuit breaker without a slot (deliver.ts `park`). */
  private parked = 0;
  /** Set at the stop deadline: POSTs still running then are left to finish unacked. */
  private abandoned = false;
  private pumping: Promise<void> | undefined;
  private idle: (() => void) | undefined;

  constructor(
    private readonly ctx: DeliverContext,
    private readonly spec: ExporterSpec,
    private readonly limit: () => number,
    /** Told the seconds from dispatch to delivery of each delivered message. */
    private readonly observeDelivery: ((seconds: number) => void) | undefined,
  ) {
    this.slots = new Slots(limit);
    this.keys = spec.ext.orderingKey ? new KeyQueues() : undefined;
    const b = spec.ext.batch;
    this.batcher = b ? new Batcher(b, ctx.clock, () => void this.pump()) : undefined;
  }

  private get stopping(): boolean {
    return this.ctx.stopping.aborted;
  }

  /** Messages read ahead and waiting behind their key or in open batches: at most this many. */
  private maxWaiting(): number {
    return Math.max(1000, 16 * this.spec.maxInFlight);
  }

  /**
   * Delivery controls: a message waiting for an open circuit breaker gives its slot up (when
   * max-in-flight is above 1), so messages to other origins go on (up to 1000 or 16 ×
   * max-in-flight waiting messages); it takes a slot again before its attempt.
   */
  park = (): boolean => {
    // At max-in-flight 1 order is strict: the waiting message keeps its slot, nothing overtakes it.
    if (this.limit() <= 1 || this.parked >= this.maxWaiting()) return false;
    this.parked++;
    this.slots.release();
    this.ctx.state.inFlight = this.slots.used;
    return true;
  };

  unpark = async (): Promise<void> => {
    this.parked--;
    await this.slots.free();
    this.slots.take();
    this.ctx.state.inFlight = this.slots.used;
  };

  /**
   * Hands one message on, in topic order. Returns a promise only when the loop must wait (every
   * slot taken, too many waiting): an await per message costs a turn of the microtask queue.
   */
  dispatch(reader: TopicReader, msg: Message): Promise<void> | undefined {
    if (this.batcher) return this.gather(reader, msg, this.batcher);
    if (this.slots.full) return this.slots.free().then(() => this.start(reader, msg));
    return this.start(reader, msg);
  }

  private start(reader: TopicReader, msg: Message): Promise<void> | undefined {
    // Entries not dispatched stay in our pending list and are read again at the next start.
    if (this.stopping) return undefined;
    if (!this.keys) {
      void this.handle(reader, msg);
      return undefined;
    }
    const key = orderingKeyOf(this.ctx, msg);
    if (this.keys.admit(key, { reader, msg })) {
      void this.handle(reader, msg, key);
      return undefined;
    }
    // Waiting behind its key without a slot; the number waiting is bounded.
    return this.keys.waiting > this.maxWaiting() ? this.whileOver(() => this.keys!.waiting) : undefined;
  }

  private async whileOver(waiting: () => number): Promise<void> {
    while (waiting() > this.maxWaiting() && !this.stopping) await this.slots.released();
  }

  /** batch: the message prepared now and put into its group's open batch. */
  private gather(reader: TopicReader, msg: Message, batcher: Batcher): Promise<void> | undefined {
    if (this.stopping) return undefined;
    const p = prepare(this.ctx, msg);
    if (typeof p === 'string') {
      // Filtered, or ignored without a dead-letter topic: handled at once, no slot.
      reader.handled(msg.entry.id, p as Exclude<Outcome, 'aborted'>);
      this.ctx.state.version++;
      return undefined;
    }
    if (p instanceof Promise) {
      // Ignored, to the dead-letter topic: the append takes a slot like a POST.
      const go = () => {
        if (!this.stopping) void this.handle(reader, msg, undefined, p);
      };
      if (this.slots.full) return this.slots.free().then(go);
      go();
      return undefined;
    }
    const key = this.keys ? orderingKeyOf(this.ctx, msg) : undefined;
    let group = reader.topic;
    if (!this.spec.staticTarget) group += `\n${p.target.origin}${p.target.path}`;
    if (key !== undefined) group += `\n${key}`;
    batcher.add(group, key, { reader, msg, prepared: p });
    if (batcher.pending > this.maxWaiting()) batcher.sealAll();
    return batcher.ready.length > 0 ? this.pump() : undefined;
  }

  /** Gives each sealed batch a slot, oldest first; one pump at a time. */
  private pump(): Promise<void> {
    this.pumping ??= this.pumpReady().finally(() => (this.pumping = undefined));
    return this.pumping;
  }

  private async pumpReady(): Promise<void> {
    const ready = this.batcher!.ready;
    while (ready.length > 0 && !this.stopping) {
      if (this.slots.full) await this.slots.free();
      if (this.stopping) return;
      const b = ready.shift()!;
      if (!this.keys || b.key === undefined) void this.handleBatch(b);
      else if (this.keys.admit(b.key, b)) void this.handleBatch(b, b.key);
      else await this.whileOver(() => this.keys!.waiting);
    }
  }

  private started(): number {
    this.slots.take();
    this.ctx.state.inFlight = this.slots.used;
    this.ctx.controls.limiter?.started(this.slots.used);
    return this.observeDelivery ? this.ctx.clock.now() : 0;
  }

  /**
   * One message through deliver. Its slot is held until the reader's ack of it is confirmed:
   * handled but unacknowledged messages count toward max-in-flight (the crash promise).
   */
  private async handle(reader: TopicReader, msg: Message, key?: string, pending?: Promise<Outcome>): Promise<void> {
    const started = this.started();
    let acked = false;
    try {
      const outcome = await (pending ?? deliver(this.ctx, msg)).catch((err: unknown) => {
        this.ctx.state.error(`message ${msg.entry.id} ignored: ${errorText(err)}`, this.ctx.clock.now());
        return 'ignored' as const;
      });
      if (outcome !== 'aborted' && !this.abandoned) {
        // Counted by the bus with the ack (exact across a kill -9); the state follows its totals.
        reader.handled(msg.entry.id, outcome, () => this.finished(key));
        acked = true;
        if (outcome === 'delivered') this.observeDelivery?.((this.ctx.clock.now() - started) / 1000);
      }
    } finally {
      if (!acked) this.finished(key);
    }
  }

  private async handleBatch(b: Batch, key?: string): Promise<void> {
    const started = this.started();
    let acked = false;
    try {
      const p = b.post(this.spec.format, this.ctx.controls.signer !== undefined);
      const outcome = await post(this.ctx, p).catch((err: unknown) => {
        this.ctx.state.error(`batch of ${p.messages.length} ignored: ${errorText(err)}`, this.ctx.clock.now());
        return 'ignored' as const;
      });
      if (outcome !== 'aborted' && !this.abandoned) {
        // A batch succeeds or fails as one POST: every message it carries has its outcome.
        let left = b.items.length;
        const confirmed = () => {
          if (--left === 0) this.finished(key);
        };
        for (const i of b.items) i.reader.handled(i.msg.entry.id, outcome, confirmed);
        acked = true;
        if (outcome === 'delivered' && this.observeDelivery) {
          const s = (this.ctx.clock.now() - started) / 1000;
          for (let i = 0; i < b.items.length; i++) this.observeDelivery(s);
        }
      }
    } finally {
      if (!acked) this.finished(key);
    }
  }

  /** A unit is handled: its slot goes to the next of its key (ordering-key) or is released. */
  private finished(key: string | undefined): void {
    const next = key !== undefined && !this.stopping ? this.keys?.next(key) : undefined;
    if (next) {
      // The next message of this key takes the slot over (handle takes it again).
      this.slots.used--;
      if (next instanceof Batch) void this.handleBatch(next, key);
      else void this.handle(next.reader, next.msg, key);
    } else this.slots.release();
    const { state } = this.ctx;
    state.inFlight = this.slots.used;
    state.version++;
    if (this.slots.used === 0 && this.parked === 0) this.idle?.();
  }

  /** At stop: nothing new starts; resolves once every running unit has ended. */
  async drain(): Promise<void> {
    this.keys?.clear();
    this.batcher?.clear();
    this.slots.stop();
    while (this.slots.used > 0 || this.parked > 0)
      await new Promise<void>((resolve) => {
        this.idle = resolve;
      });
  }

  /** Past the stop deadline: what still runs is not acked (it stays pending: at-least-once). */
  abandon(): void {
    this.abandoned = true;
  }
}
