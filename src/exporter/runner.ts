/**
 * Runs the units the dispatcher hands on (dispatch.ts): one message through `deliver`, or one
 * batch through `post`, each in an in-flight slot (slots.ts) held until the reader's ack of
 * its messages is confirmed, so handled but unacknowledged messages count toward
 * max-in-flight (at most that many are sent again after a kill -9). With `ordering-key` the
 * slot of a handled unit goes to the next unit of its key. A message waiting for an open
 * circuit breaker may give its slot up meanwhile (`park`).
 */
import type { ExporterSpec } from '../resources/webhook/spec.js';
import { errorText } from '../lib/error-text.js';
import { Batch } from './batch.js';
import {
  deliver,
  ignore,
  post,
  postOf,
  type DeliverContext,
  type Ignore,
  type Outcome,
  type Prepared,
} from './deliver.js';
import type { Message } from './message.js';
import type { KeyQueues } from './ordering.js';
import { Slots } from './slots.js';
import type { TopicReader } from './topic-reader.js';

/** One message, or a sealed batch: what takes one slot and one POST. */
export type Unit = { reader: TopicReader; msg: Message } | Batch;

/** Messages read ahead and waiting (behind their key, in open batches, for a breaker): at most this many. */
export const maxWaiting = (spec: ExporterSpec): number => Math.max(1000, 16 * spec.maxInFlight);

export class Runner {
  readonly slots: Slots;
  /** Messages waiting for an open circuit breaker without a slot (deliver.ts `park`). */
  private parked = 0;
  /** Set at the stop deadline: POSTs still running then are left to finish unacked. */
  private abandoned = false;
  private idle: (() => void) | undefined;

  constructor(
    private readonly ctx: DeliverContext,
    private readonly spec: ExporterSpec,
    private readonly limit: () => number,
    /** ordering-key: the units waiting behind a busy key. */
    private readonly keys: KeyQueues<Unit> | undefined,
    /** Told the seconds from dispatch to delivery of each delivered message. */
    private readonly observeDelivery: ((seconds: number) => void) | undefined,
  ) {
    this.slots = new Slots(limit);
  }

  private get stopping(): boolean {
    return this.ctx.stopping.aborted;
  }

  /**
   * Delivery controls: a message waiting for an open circuit breaker gives its slot up (when
   * max-in-flight is above 1), so messages to other origins go on (up to 1000 or 16 ×
   * max-in-flight waiting messages); it takes a slot again before its attempt.
   */
  park = (): boolean => {
    // At max-in-flight 1 order is strict: the waiting message keeps its slot, nothing overtakes it.
    if (this.limit() <= 1 || this.parked >= maxWaiting(this.spec)) return false;
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

  private started(): number {
    this.slots.take();
    this.ctx.state.inFlight = this.slots.used;
    this.ctx.controls.limiter?.started(this.slots.used);
    return this.observeDelivery ? this.ctx.clock.now() : 0;
  }

  /** Without ordering-key: what a handled message's confirmed ack calls (one function, not a closure a message). */
  private readonly finishedUnkeyed = (): void => this.finished(undefined);

  /**
   * One message through deliver, or through what the dispatcher prepared for it (`ready`: its
   * POST or why it is ignored, or the dead-letter append under way), started now that the slot
   * is taken. Its slot is held until the reader's ack of it is confirmed: handled but
   * unacknowledged messages count toward max-in-flight (the crash promise).
   */
  async handle(
    reader: TopicReader,
    msg: Message,
    key?: string,
    ready?: Prepared | Ignore | Promise<Outcome>,
  ): Promise<void> {
    const started = this.started();
    let acked = false;
    try {
      let outcome: Outcome;
      try {
        const { ctx } = this;
        outcome = await (ready === undefined
          ? deliver(ctx, msg)
          : ready instanceof Promise
            ? ready
            : 'ignore' in ready
              ? ignore(ctx, msg, ready.ignore)
              : post(ctx, postOf(ctx, msg, ready)));
      } catch (err) {
        this.ctx.state.error(`message ${msg.entry.id} ignored: ${errorText(err)}`, this.ctx.clock.now());
        outcome = 'ignored';
      }
      if (outcome !== 'aborted' && !this.abandoned) {
        // Counted by the bus with the ack (exact across a kill -9); the state follows its totals.
        reader.handled(msg.entry.id, outcome, key === undefined ? this.finishedUnkeyed : () => this.finished(key));
        acked = true;
        if (outcome === 'delivered') this.observeDelivery?.((this.ctx.clock.now() - started) / 1000);
      }
    } finally {
      if (!acked) this.finished(key);
    }
  }

  async handleBatch(b: Batch, key?: string): Promise<void> {
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
