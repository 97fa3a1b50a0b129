/**
 * One consumed topic of one exporter: its consumer group, the read cursor (own pending
 * entries first, then new ones), acks of handled messages (one XACK under way at a time, the
 * next carrying all handled meanwhile), and recovery when the group
 * vanished (NOGROUP after a Redis restart without persistence): the group is recreated
 * after the last message handled in order, so nothing is skipped.
 */
import {
  BusError,
  type Bus,
  type CountedOutcome,
  type GroupRead,
  type OutcomeCounts,
  type GroupStart,
  type StreamEntry,
} from '../bus/bus.js';
import { log } from '../lib/log.js';
import { AckQueue } from './ack-queue.js';

/** Claims of a dead consumer's entries are at most this large, and this many per call. */
const claimCount = 1000;
const claimRounds = 100;

export class TopicReader {
  /** '0'..id while reading our own pending list (redelivery after a restart), then '>'. */
  private cursor = '0';
  /** Ids of the read entries in stream order, from the oldest not handled yet: to know the last one handled with all before it. */
  private readonly order: string[] = [];
  /** Ids of `order` handled out of turn (before an older one). */
  private readonly doneAhead = new Set<string>();
  private lastHandled: string | undefined;
  /** Entries taken over from dead consumers while running, read before anything else. */
  private readonly claimed: StreamEntry[] = [];
  /** Dead consumers with nothing left pending in this group. */
  private readonly drainedDead = new Set<string>();
  private readonly acks: AckQueue;

  constructor(
    private readonly bus: Bus,
    readonly topic: string,
    private readonly group: string,
    private readonly consumer: string,
    private readonly start: GroupStart,
    /** The name the outcomes are counted under (bus.ts AckCount): the group and the site. */
    private readonly countAs: string = `${group}|`,
    /** Told the counted outcomes on this topic: at open, then after each ack. */
    private readonly onCounts: (topic: string, counts: OutcomeCounts) => void = () => {},
  ) {
    this.acks = new AckQueue(bus, topic, group, countAs, (counts) => onCounts(topic, counts));
  }

  async open(): Promise<void> {
    await this.bus.ensureGroup(this.topic, this.group, this.start);
    this.onCounts(this.topic, await this.bus.counts(this.topic, this.countAs));
    // Entries of dead consumers (a crashed or stopped process, a consumer name of an older
    // version) join our pending list, which the first reads (cursor '0') return in order.
    const others = (await this.bus.groupConsumers(this.topic, this.group)).filter((c) => c !== this.consumer);
    for (const dead of await this.bus.deadAmong(others)) await this.claimFrom(dead, 0);
  }

  /**
   * While running: takes over the entries pending for dead consumers (idle at least
   * minIdleMs, so two survivors do not both take them); the next reads return them.
   */
  async claimDead(dead: readonly string[], minIdleMs: number): Promise<number> {
    // Still reading our own pending list: claimed entries would be read twice.
    if (this.cursor !== '>') return 0;
    let n = 0;
    for (const c of dead) {
      if (c === this.consumer || this.drainedDead.has(c)) continue;
      const entries = await this.claimFrom(c, minIdleMs);
      this.claimed.push(...entries);
      n += entries.length;
    }
    return n;
  }

  private async claimFrom(dead: string, minIdleMs: number): Promise<StreamEntry[]> {
    const out: StreamEntry[] = [];
    for (let i = 0; i < claimRounds; i++) {
      const r = await this.bus.claimFrom(this.topic, this.group, dead, this.consumer, minIdleMs, claimCount);
      out.push(...r.entries);
      if (r.drained) this.drainedDead.add(dead);
      if (r.drained || r.entries.length === 0) break;
    }
    if (out.length > 0)
      log('info', 'exporter: took over the pending entries of a dead consumer', {
        topic: this.topic,
        group: this.group,
        from: dead,
        entries: out.length,
      });
    return out;
  }

  async read(count: number): Promise<GroupRead> {
    if (this.claimed.length > 0) {
      const entries = this.claimed.splice(0, count);
      for (const e of entries) this.took(e.id);
      return { entries, lag: undefined };
    }
    for (let i = 0; ; i++) {
      const r = await this.readOnce(count);
      // A part of the pending list with nothing new in it (all in flight here), or the list
      // drained: go on with its next part or with new entries now rather than after a wake-up.
      if (r.entries.length > 0 || !r.wasPending || i >= 100) return r;
    }
  }

  private took(id: string): void {
    this.order.push(id);
  }

  /**
   * Entries read and not yet confirmed acknowledged: not handled in order yet (`order`), or
   * handled with their ack queued or under way. A read of our own pending list after a failed
   * read skips them (they are in flight here, not lost). Made only then: a Set kept up to date
   * would cost an add and a delete a message.
   */
  private unconfirmed(): Set<string> {
    const ids = new Set(this.order);
    this.acks.addHeld(ids);
    return ids;
  }

  private async readOnce(count: number): Promise<GroupRead & { wasPending: boolean }> {
    const cursor = this.cursor;
    let r: GroupRead;
    try {
      r = await this.bus.read(this.topic, this.group, this.consumer, { cursor, count });
    } catch (err) {
      if (!(err instanceof BusError && err.code === 'no-group')) {
        // The read may have been done without its answer reaching us (a connection lost, a
        // failover): the entries it took are then pending for this consumer and no '>' read
        // returns them again. The next read starts from our pending list.
        this.cursor = '0';
        throw err;
      }
      const at: GroupStart = this.lastHandled ? { at: 'after', id: this.lastHandled } : this.start;
      log('warn', 'exporter: consumer group missing, recreating it', {
        topic: this.topic,
        group: this.group,
        after: this.lastHandled ?? null,
      });
      await this.bus.ensureGroup(this.topic, this.group, at);
      // A new group has no pending entries: read new ones at once.
      this.order.length = 0;
      this.doneAhead.clear();
      this.cursor = '>';
      const fresh = await this.bus.read(this.topic, this.group, this.consumer, { cursor: '>', count });
      for (const e of fresh.entries) this.took(e.id);
      return { ...fresh, wasPending: false };
    }
    if (cursor !== '>') {
      const last = r.entries[r.entries.length - 1];
      this.cursor = last ? last.id : '>';
      // Entries already read and not yet acknowledged are in flight here: not read twice.
      const inFlight = r.entries.length > 0 ? this.unconfirmed() : undefined;
      if (inFlight && inFlight.size > 0) r = { ...r, entries: r.entries.filter((e) => !inFlight.has(e.id)) };
    }
    for (const e of r.entries) this.took(e.id);
    return { ...r, wasPending: cursor !== '>' };
  }

  /**
   * The message `id` is handled: its ack is queued, and `confirmed` is called once Redis has
   * confirmed it (the exporter holds the message's in-flight slot until then, so handled but
   * unacknowledged messages count toward max-in-flight: a kill -9 re-sends at most that many).
   */
  handled(id: string, outcome: CountedOutcome, confirmed?: () => void): void {
    const order = this.order;
    if (order[0] === id) {
      // The oldest: with it, those handled out of turn right after it.
      this.lastHandled = order.shift();
      while (order.length > 0 && this.doneAhead.delete(order[0]!)) this.lastHandled = order.shift();
      // Nothing read is waiting: nothing is ahead either (an id handled twice is forgotten here).
      if (order.length === 0) this.doneAhead.clear();
    } else this.doneAhead.add(id);
    this.acks.add(id, outcome, confirmed);
  }

  /** Sends the acks not sent yet and waits for every XACK under way (one more try for failed ones). */
  flush(): Promise<void> {
    return this.acks.flush();
  }
}
