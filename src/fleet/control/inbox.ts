/**
 * The sync streams' side of the log's append notifications (routes.ts): one subscription per
 * process, an inbox per stream. A notification carries its entry and the head it follows
 * (change-log.ts), so a stream at that head sends the entry without reading the log.
 */
import type { Appended, FleetLog } from './change-log.js';

/**
 * What a sync stream hears of its site's log between two sends: the entries the append
 * notifications carried, or `missed` when one came without its entry (too large), when too
 * many piled up, or before the stream's first read, so the stream reads the log instead.
 */
export type Inbox = {
  /** The entries heard since the last take, and whether the log must be read. */
  take(): { entries: Appended[]; missed: boolean };
  /**
   * Resolves true as soon as something is heard (at once if it already was), false after `ms`
   * (and up to a quarter of it more, at most a second: one timer sweeps every inbox's wait).
   */
  wait(ms: number): Promise<boolean>;
  close(): void;
};

/** Entries an inbox keeps before it gives up and has its stream read the log. */
const inboxLimit = 100;

/**
 * The inboxes of one process, and the one timer that ends their waits: a timer a wait (made and
 * cleared at every change a stream sends) cost more than the wait itself, and a timer object
 * for each of 10,000 idle streams.
 */
class Boxes {
  readonly open = new Map<string, Box[]>();
  private sweeper: NodeJS.Timeout | undefined;
  private everyMs = Infinity;

  /** A box waits up to `ms`: the sweep runs at least every quarter of it (at most once a second, at least every 5 ms). */
  waiting(ms: number): void {
    const every = Math.max(5, Math.min(1000, ms / 4));
    if (this.sweeper && every >= this.everyMs) return;
    clearInterval(this.sweeper);
    this.everyMs = every;
    this.sweeper = setInterval(() => this.sweep(), every);
    this.sweeper.unref();
  }
  /** Ends the waits whose time is up. */
  private sweep(): void {
    const now = Date.now();
    for (const boxes of this.open.values()) for (const box of boxes) if (box.wake && box.until <= now) box.wake(false);
  }
  closed(): void {
    if (this.open.size > 0) return;
    clearInterval(this.sweeper);
    this.sweeper = undefined;
    this.everyMs = Infinity;
  }
}

/**
 * One stream's inbox. A class and an array per site (not closures and a Set): the control plane
 * holds one per connected site, and every byte of it counts 10,000 times.
 */
class Box implements Inbox {
  entries: Appended[] = [];
  missed = true;
  /** Ends the current wait: true when something was heard. */
  wake: ((heard: boolean) => void) | undefined = undefined;
  /** When the current wait ends without news (Date.now() time). */
  until = 0;
  constructor(
    private readonly boxes: Boxes,
    private readonly site: string,
  ) {}
  take(): { entries: Appended[]; missed: boolean } {
    const out = { entries: this.entries, missed: this.missed };
    this.entries = [];
    this.missed = false;
    return out;
  }
  wait(ms: number): Promise<boolean> {
    if (this.missed || this.entries.length > 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      this.until = Date.now() + ms;
      this.wake = (heard) => {
        this.wake = undefined;
        resolve(heard);
      };
      this.boxes.waiting(ms);
    });
  }
  close(): void {
    this.wake?.(true);
    const open = this.boxes.open;
    const boxes = open.get(this.site);
    const i = boxes?.indexOf(this) ?? -1;
    if (i >= 0) boxes!.splice(i, 1);
    if (boxes?.length === 0) open.delete(this.site);
    this.boxes.closed();
  }
}

/** Per process: one subscription to the log's append notifications, an inbox per stream. */
export function createInboxes(fleetLog: FleetLog): (site: string) => Inbox {
  const all = new Boxes();
  const open = all.open;
  // Notifications may have been lost (the subscription was made again): every stream reads its log.
  fleetLog.onResync(() => {
    for (const boxes of open.values())
      for (const box of boxes) {
        box.missed = true;
        box.entries = [];
        box.wake?.(true);
      }
  });
  fleetLog.onAppend((site, appended) => {
    for (const box of open.get(site) ?? []) {
      if (appended && !box.missed && box.entries.length < inboxLimit) box.entries.push(appended);
      else {
        box.missed = true;
        box.entries = [];
      }
      box.wake?.(true);
    }
  });
  return (site) => {
    const box = new Box(all, site);
    const boxes = open.get(site);
    if (boxes) boxes.push(box);
    else open.set(site, [box]);
    return box;
  };
}
