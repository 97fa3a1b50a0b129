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
  /** Resolves true as soon as something is heard (at once if it already was), false after `ms`. */
  wait(ms: number): Promise<boolean>;
  close(): void;
};

/** Entries an inbox keeps before it gives up and has its stream read the log. */
const inboxLimit = 100;

/**
 * One stream's inbox. A class and an array per site (not closures and a Set): the control plane
 * holds one per connected site, and every byte of it counts 10,000 times.
 */
class Box implements Inbox {
  entries: Appended[] = [];
  missed = true;
  wake: (() => void) | undefined = undefined;
  constructor(
    private readonly open: Map<string, Box[]>,
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
      const timer = setTimeout(() => {
        this.wake = undefined;
        resolve(false);
      }, ms);
      timer.unref();
      this.wake = () => {
        this.wake = undefined;
        clearTimeout(timer);
        resolve(true);
      };
    });
  }
  close(): void {
    this.wake?.();
    const boxes = this.open.get(this.site);
    const i = boxes?.indexOf(this) ?? -1;
    if (i >= 0) boxes!.splice(i, 1);
    if (boxes?.length === 0) this.open.delete(this.site);
  }
}

/** Per process: one subscription to the log's append notifications, an inbox per stream. */
export function createInboxes(fleetLog: FleetLog): (site: string) => Inbox {
  const open = new Map<string, Box[]>();
  // Notifications may have been lost (the subscription was made again): every stream reads its log.
  fleetLog.onResync(() => {
    for (const boxes of open.values())
      for (const box of boxes) {
        box.missed = true;
        box.entries = [];
        box.wake?.();
      }
  });
  fleetLog.onAppend((site, appended) => {
    for (const box of open.get(site) ?? []) {
      if (appended && !box.missed && box.entries.length < inboxLimit) box.entries.push(appended);
      else {
        box.missed = true;
        box.entries = [];
      }
      box.wake?.();
    }
  });
  return (site) => {
    const box = new Box(open, site);
    const boxes = open.get(site);
    if (boxes) boxes.push(box);
    else open.set(site, [box]);
    return box;
  };
}
