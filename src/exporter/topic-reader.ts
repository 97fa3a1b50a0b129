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
    let r: GroupRead;
    try {
      r = await this.bus.read(this.topic, this.group, this.consumer, { cursor: this.cursor, count });
    } catch (err) {
      if (!(err instanceof BusError && err.code === 'no-group')) throw err;
      const at: StartAt = this.lastHandled ? { at: 'after', id: this.lastHandled } : this.start;
      log('warn', 'exporter: consumer group missing, recreating it', { topic: this.topic, group: this.group, after: this.lastHandled ?? null });
      await this.bus.ensureGroup(this.topic, this.group, at);
      this.cursor = '0';
      this.order.length = 0;
      return { entries: [], lag: undefined };
    }
    if (this.cursor !== '>') {
      const last = r.entries[r.entries.length - 1];
      this.cursor = last ? last.id : '>';
    }
    for (const e of r.entries) this.order.push({ id: e.id, done: false });
    return r;
  }

  handled(id: string): void {
    const item = this.order.find((o) => o.id === id && !o.done);
    if (item) item.done = true;
    while (this.order[0]?.done) this.lastHandled = this.order.shift()!.id;
    this.acks.push(id);
    if (!this.flushQueued) {
      this.flushQueued = true;
      // One XACK for everything handled in this turn of the event loop.
      setImmediate(() => { this.flushQueued = false; void this.flush(); });
    }
  }

  async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
    if (this.acks.length === 0) return;
    const ids = this.acks;
    this.acks = [];
    this.flushing = this.bus.ack(this.topic, this.group, ids).catch((err: unknown) => {
      // Kept for the next flush: an unacked handled message would be sent again after a restart.
      if (!(err instanceof BusError && err.code === 'no-group')) this.acks.push(...ids);
      log('debug', 'exporter: ack failed', { topic: this.topic, error: String(err) });
    }).finally(() => { this.flushing = undefined; });
    await this.flushing;
  }

  hasUnackedHandled(): boolean {
    return this.acks.length > 0;
  }
}
