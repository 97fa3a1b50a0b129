/**
 * The acks of one consumed topic: each handled message's XACK, with its outcome counted in the
 * same round trip (bus.ts AckCount: exact counters across a kill -9). The acks of one turn go
 * together; while an XACK is under way, the messages handled meanwhile wait and go together in
 * the next one (amortised: one round trip for many messages when many are in flight, one per
 * message at max-in-flight 1). Each message's `confirmed` is called once Redis confirmed its
 * ack: the exporter frees the message's in-flight slot only then, so handled but unacknowledged
 * messages count toward max-in-flight and a kill -9 re-sends at most that many. A failed XACK
 * is kept and sent again after `ackRetryMs`.
 *
 * The counted totals come back with an ack at most every `totalsEveryMs`; the acks in between
 * skip them (at max-in-flight 1 that is nearly every ack, each on the path from one POST to
 * the next), and the totals are read once more `totalsEveryMs` after an ack that skipped them
 * unless a later ack brought them: the counters shown are at most that far behind, and exact
 * once acks stop (and after `flush`).
 */
import { BusError, type Bus, type CountedOutcome, type OutcomeCounts } from '../bus/bus.js';
import { log } from '../lib/log.js';
import { errorText } from '../lib/error-text.js';

/** The wait before acks that failed (Redis unreachable) are sent again. */
const ackRetryMs = 200;

/** The counted totals are asked for with an ack at most this often (ms). */
const totalsEveryMs = 100;

export class AckQueue {
  private acks: string[] = [];
  /** The outcome of each id in `acks`, counted by the bus with the ack. */
  private outcomes: CountedOutcome[] = [];
  /** Called once the acks queued with them are confirmed (the exporter's slots). */
  private confirmed: Array<() => void> = [];
  private ackQueued = false;
  private readonly sending = new Set<Promise<void>>();
  /** The ids of each XACK under way. */
  private readonly sendingIds = new Set<readonly string[]>();
  /** Set while failed acks wait to be sent again. */
  private retryTimer: NodeJS.Timeout | undefined;
  /** performance.now() when the totals were last asked for (with an ack or alone). */
  private totalsAskedAt = -Infinity;
  /** Numbers of the requests sent: the last that asked for the totals, the last ack that did not. */
  private sent = 0;
  private lastWithTotals = 0;
  private lastWithout = 0;
  /** Set while the totals wait to be read again after an ack that skipped them. */
  private totalsTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly bus: Bus,
    private readonly topic: string,
    private readonly group: string,
    /** The name the outcomes are counted under (bus.ts AckCount). */
    private readonly countAs: string,
    /** Told the counted totals after each ack. */
    private readonly onCounts: (counts: OutcomeCounts) => void,
  ) {}

  /** Adds to `into` the ids queued or under way here: handled, their ack not confirmed yet. */
  addHeld(into: Set<string>): void {
    for (const id of this.acks) into.add(id);
    for (const ids of this.sendingIds) for (const id of ids) into.add(id);
  }

  add(id: string, outcome: CountedOutcome, confirmed?: () => void): void {
    this.acks.push(id);
    this.outcomes.push(outcome);
    if (confirmed) this.confirmed.push(confirmed);
    if (this.ackQueued) return;
    this.ackQueued = true;
    // Sent at the end of this turn, together with the acks of messages handled in the same turn.
    queueMicrotask(this.ackTurn);
  }

  private readonly ackTurn = (): void => {
    this.ackQueued = false;
    if (this.sending.size === 0) this.sendAcks();
  };

  private sendAcks(): void {
    if (this.acks.length === 0 || this.retryTimer) return;
    const ids = this.acks;
    const outcomes = this.outcomes;
    const confirmed = this.confirmed;
    this.acks = [];
    this.outcomes = [];
    this.confirmed = [];
    const now = performance.now();
    const totals = now - this.totalsAskedAt >= totalsEveryMs;
    if (totals) {
      this.totalsAskedAt = now;
      this.lastWithTotals = ++this.sent;
    } else this.lastWithout = ++this.sent;
    const p = this.bus
      .ack(this.topic, this.group, ids, { as: this.countAs, outcomes, totals })
      .then(
        (counts) => {
          this.sendingIds.delete(ids);
          if (counts) this.onCounts(counts);
          else this.totalsLater();
          for (const c of confirmed) c();
        },
        (err: unknown) => {
          this.sendingIds.delete(ids);
          log('debug', 'exporter: ack failed', { topic: this.topic, error: errorText(err) });
          if (err instanceof BusError && err.code === 'no-group') {
            // The group is gone (and recreated after the last message handled in order).
            for (const c of confirmed) c();
            return;
          }
          // Kept for the next try: an unacked handled message would be sent again after a restart.
          this.acks.push(...ids);
          this.outcomes.push(...outcomes);
          this.confirmed.push(...confirmed);
          this.retryTimer = setTimeout(() => {
            this.retryTimer = undefined;
            if (this.sending.size === 0) this.sendAcks();
          }, ackRetryMs);
          this.retryTimer.unref();
        },
      )
      .finally(() => {
        this.sending.delete(p);
        // What was handled meanwhile goes now, in one XACK.
        if (this.sending.size === 0) this.sendAcks();
      });
    this.sending.add(p);
    this.sendingIds.add(ids);
  }

  /** After an ack that skipped the totals: they are read in `totalsEveryMs`, unless a later ack brings them. */
  private totalsLater(): void {
    if (this.totalsTimer) return;
    this.totalsTimer = setTimeout(() => {
      this.totalsTimer = undefined;
      void this.readTotals();
    }, totalsEveryMs);
    this.totalsTimer.unref();
  }

  /**
   * Reads the totals when an ack that skipped them was sent after the last request that asked
   * for them. On the connection of the acks: the answer counts every ack sent before it.
   */
  private async readTotals(): Promise<void> {
    if (this.lastWithout < this.lastWithTotals) return;
    this.totalsAskedAt = performance.now();
    this.lastWithTotals = ++this.sent;
    try {
      this.onCounts(await this.bus.counts(this.topic, this.countAs));
    } catch (err) {
      log('debug', 'exporter: reading the counts failed', { topic: this.topic, error: errorText(err) });
    }
  }

  /** Sends the acks not sent yet and waits for every XACK under way (one more try for failed ones). */
  async flush(): Promise<void> {
    for (let i = 0; i < 2; i++) {
      while (this.sending.size > 0) await Promise.all([...this.sending]);
      clearTimeout(this.retryTimer);
      this.retryTimer = undefined;
      this.sendAcks();
      while (this.sending.size > 0) await Promise.all([...this.sending]);
    }
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    clearTimeout(this.totalsTimer);
    this.totalsTimer = undefined;
    await this.readTotals();
  }
}
