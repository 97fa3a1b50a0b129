/**
 * What the exporter's loop does with each message it read, in topic order: hands it to the
 * runner (runner.ts: a slot, deliver, the ack), behind its key with `ordering-key`
 * (ordering.ts), or gathered into a batch with `batch` (batch.ts), whose sealed batches it then
 * hands on. The loop waits here only while every slot is taken (or too many messages wait
 * behind their keys or in open batches), which bounds what is read ahead.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { ExporterSpec } from '../resources/webhook/spec.js';
import { Batcher } from './batch.js';
import {
  examine,
  orderingKeyOf,
  prepare,
  type DeliverContext,
  type Ignore,
  type Outcome,
  type Prepared,
} from './deliver.js';
import type { Message } from './message.js';
import { KeyQueues } from './ordering.js';
import { maxWaiting, Runner, type Unit } from './runner.js';
import type { TopicReader } from './topic-reader.js';

/** What `examine` made of a message: its POST, filtered, or why it is ignored. */
type Examined = Prepared | 'filtered' | Ignore;

/**
 * Resolves in the event loop's check phase, after the setImmediate that writes a POST on a
 * kept-alive connection (undici validates an idle socket in a setImmediate, then writes): that
 * one is queued while the POST is dispatched, before this one, and immediates run in order.
 * One turn, not two: each turn more is an epoll_wait and an entry into JavaScript a message.
 */
const afterWrite = (): Promise<void> => nextTurn();

export class Dispatcher {
  readonly runner: Runner;
  /** ordering-key: the units waiting behind a busy key. */
  private readonly keys: KeyQueues<Unit> | undefined;
  private readonly batcher: Batcher | undefined;
  private pumping: Promise<void> | undefined;

  constructor(
    private readonly ctx: DeliverContext,
    private readonly spec: ExporterSpec,
    limit: () => number,
    observeDelivery: ((seconds: number) => void) | undefined,
  ) {
    this.keys = spec.ext.orderingKey ? new KeyQueues() : undefined;
    this.runner = new Runner(ctx, spec, limit, this.keys, observeDelivery);
    const b = spec.ext.batch;
    this.batcher = b ? new Batcher(b, ctx.clock, () => void this.pump()) : undefined;
  }

  private get stopping(): boolean {
    return this.ctx.stopping.aborted;
  }

  private get slots() {
    return this.runner.slots;
  }

  /**
   * Hands one message on, in topic order. Returns a promise only when the loop must wait (every
   * slot taken, too many waiting): an await per message costs a turn of the microtask queue.
   */
  dispatch(reader: TopicReader, msg: Message, examined?: Examined): Promise<void> | undefined {
    if (this.batcher) return this.gather(reader, msg, this.batcher);
    if (!this.keys) return this.ahead(reader, msg, examined);
    if (this.slots.full) return this.slots.free().then(() => this.start(reader, msg));
    return this.start(reader, msg);
  }

  /**
   * Without ordering-key or batch: the filters and the expansion of every message of one read,
   * in one pass (`examine` has no side effect: nothing is recorded or sent), each message then
   * holding its entry only. One tight loop over a read costs measurably less CPU a message than
   * the same work done between each POST and ack (see `ahead`). Undefined with ordering-key or
   * batch (their messages are prepared one by one).
   */
  examineAll(msgs: readonly Message[]): Examined[] | undefined {
    if (this.batcher || this.keys) return undefined;
    const out = new Array<Examined>(msgs.length);
    for (let i = 0; i < msgs.length; i++) {
      const msg = msgs[i]!;
      const p = examine(this.ctx, msg);
      // What is left to do needs the entry only: what was derived from it is let go.
      if (p !== 'filtered') msg.release();
      out[i] = p;
    }
    return out;
  }

  /**
   * Without ordering-key or batch: the message is filtered and expanded ahead (`examined`, from
   * `examineAll`; else now), while the POSTs and acks of the messages before it may still hold
   * every slot (at max-in-flight 1 the next POST then starts as soon as the previous ack is
   * confirmed, with nothing else on that chain). Nothing is sent before the slot is taken, so
   * the crash promise holds: at most max-in-flight messages sent and not acknowledged. A
   * filtered message is handled at once, in its turn, without a slot.
   */
  private ahead(reader: TopicReader, msg: Message, examined: Examined | undefined): Promise<void> | undefined {
    if (this.stopping) return undefined;
    const p = examined ?? examine(this.ctx, msg);
    if (p === 'filtered') {
      reader.handled(msg.entry.id, 'filtered');
      this.ctx.state.version++;
      return undefined;
    }
    // What is left to do needs the entry only: what was derived from it is let go meanwhile.
    if (examined === undefined) msg.release();
    if (!this.slots.full) {
      this.go(reader, msg, p);
      return undefined;
    }
    const started = this.slots.free().then(() => this.go(reader, msg, p));
    // Examined now, at max-in-flight 1: undici writes a request from a setImmediate, so the
    // next message's preparation waits for the check phase, until this POST is on the wire; run
    // at once, it would delay the write by its own time and gain nothing.
    return examined === undefined && this.slots.limit() === 1 ? started.then(afterWrite) : started;
  }

  /** A prepared message to the runner, now that a slot is free. */
  private go(reader: TopicReader, msg: Message, p: Prepared | Ignore): void {
    // Entries not dispatched stay in our pending list and are read again at the next start.
    if (!this.stopping) void this.runner.handle(reader, msg, undefined, p);
  }

  /** ordering-key: the message to its key's runner, or behind the key while it is busy. */
  private start(reader: TopicReader, msg: Message): Promise<void> | undefined {
    // Entries not dispatched stay in our pending list and are read again at the next start.
    if (this.stopping || !this.keys) return undefined;
    const key = orderingKeyOf(this.ctx, msg);
    if (this.keys.admit(key, { reader, msg })) {
      void this.runner.handle(reader, msg, key);
      return undefined;
    }
    // Waiting behind its key without a slot; the number waiting is bounded.
    return this.keys.waiting > maxWaiting(this.spec) ? this.whileOver(() => this.keys!.waiting) : undefined;
  }

  private async whileOver(waiting: () => number): Promise<void> {
    while (waiting() > maxWaiting(this.spec) && !this.stopping) await this.slots.released();
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
        if (!this.stopping) void this.runner.handle(reader, msg, undefined, p);
      };
      if (this.slots.full) return this.slots.free().then(go);
      go();
      return undefined;
    }
    const key = this.keys ? orderingKeyOf(this.ctx, msg) : undefined;
    // Thousands may wait in batches: each holds its entry only, not what was derived from it.
    msg.release();
    let group = reader.topic;
    if (!this.spec.staticTarget) group += `\n${p.target.origin}${p.target.path}`;
    if (key !== undefined) group += `\n${key}`;
    batcher.add(group, key, { reader, msg }, p);
    if (batcher.pending > maxWaiting(this.spec)) batcher.sealAll();
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
      if (!this.keys || b.key === undefined) void this.runner.handleBatch(b);
      else if (this.keys.admit(b.key, b)) void this.runner.handleBatch(b, b.key);
      else await this.whileOver(() => this.keys!.waiting);
    }
  }

  /** At stop: nothing new starts; resolves once every running unit has ended. */
  async drain(): Promise<void> {
    this.keys?.clear();
    this.batcher?.clear();
    await this.runner.drain();
  }
}
