/**
 * One consumed topic of one exporter: its consumer group, the read cursor (own pending
 * entries first, then new ones), acks batched per tick, and recovery when the group
 * vanished (NOGROUP after a Redis restart without persistence): the group is recreated
 * after the last message handled in order, so nothing is skipped.
 */
import { BusError, type Bus, type GroupRead, type StartAt } from '../bus/bus.js';
import { log } from '../log.js';

/** Entries pending this long for another consumer are taken over (a dead process). */
const staleMs = 60_000;
/** Acks are sent at most this long after a message is handled, or at once when this many wait. */
const ackDelayMs = 5;
const ackBatch = 128;

export class TopicReader {
  /** '0'..id while reading our own pending list (redelivery after a restart), then '>'. */
  private cursor = '0';
  /** Read entries in stream order, to know the last one handled with all before it. */
  private readonly order: Array<{ id: string; done: boolean }> = [];
  private lastHandled: string | undefined;
  private acks: string[] = [];
  private flushing: Promise<void> | undefined;
  private flushQueued = false;

  constructor(
    private readonly bus: Bus,
    readonly topic: string,
    private readonly group: string,
    private readonly consumer: string,
    private readonly start: StartAt,
  ) {}

  async open(): Promise<void> {
    await this.bus.ensureGroup(this.topic, this.group, this.start);
    // Claimed entries join our pending list, which the first reads (cursor '0') return.
    await this.bus.claimStale(this.topic, this.group, this.consumer, staleMs, 1000);
  }

  async read(count: number): Promise<GroupRead> {
    const r = await this.readOnce(count);
    // The pending list is drained: go on with new entries now rather than after a wake-up.
    if (r.entries.length === 0 && this.cursor === '>' && r.wasPending) return this.readOnce(count);
    return r;
  }

  private async readOnce(count: number): Promise<GroupRead & { wasPending: boolean }> {
    const cursor = this.cursor;
    let r: GroupRead;
    try {
      r = await this.bus.read(this.topic, this.group, this.consumer, { cursor, count });
    } catch (err) {
      if (!(err instanceof BusError && err.code === 'no-group')) throw err;
      const at: StartAt = this.lastHandled ? { at: 'after', id: this.lastHandled } : this.start;
      log('warn', 'exporter: consumer group missing, recreating it', {
        topic: this.topic,
        group: this.group,
        after: this.lastHandled ?? null,
      });
      await this.bus.ensureGroup(this.topic, this.group, at);
      // A new group has no pending entries: read new ones at once.
      this.order.length = 0;
      this.cursor = '>';
      const fresh = await this.bus.read(this.topic, this.group, this.consumer, { cursor: '>', count });
      for (const e of fresh.entries) this.order.push({ id: e.id, done: false });
      return { ...fresh, wasPending: false };
    }
    if (cursor !== '>') {
      const last = r.entries[r.entries.length - 1];
      this.cursor = last ? last.id : '>';
    }
    for (const e of r.entries) this.order.push({ id: e.id, done: false });
    return { ...r, wasPending: cursor !== '>' };
  }

  handled(id: string): void {
    const item = this.order.find((o) => o.id === id && !o.done);
    if (item) item.done = true;
    while (this.order[0]?.done) this.lastHandled = this.order.shift()!.id;
    this.acks.push(id);
    if (this.acks.length >= ackBatch) {
      void this.flush();
      return;
    }
    if (!this.flushQueued) {
      this.flushQueued = true;
      // One XACK per few milliseconds instead of one per message: per-command overhead
      // halved the throughput at max-in-flight 1. A crash may resend what was handled in
      // this short window (at-least-once).
      setTimeout(() => {
        this.flushQueued = false;
        void this.flush();
      }, ackDelayMs);
    }
  }

  async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
    if (this.acks.length === 0) return;
    const ids = this.acks;
    this.acks = [];
    this.flushing = this.bus
      .ack(this.topic, this.group, ids)
      .catch((err: unknown) => {
        // Kept for the next flush: an unacked handled message would be sent again after a restart.
        if (!(err instanceof BusError && err.code === 'no-group')) this.acks.push(...ids);
        log('debug', 'exporter: ack failed', { topic: this.topic, error: String(err) });
      })
      .finally(() => {
        this.flushing = undefined;
      });
    await this.flushing;
  }
}
