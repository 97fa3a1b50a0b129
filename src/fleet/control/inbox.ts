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

/** Per process: one subscription to the log's append notifications, an inbox per stream. */
export function createInboxes(fleetLog: FleetLog): (site: string) => Inbox {
  type Box = { entries: Appended[]; missed: boolean; wake: (() => void) | undefined };
  const open = new Map<string, Set<Box>>();
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
    const box: Box = { entries: [], missed: true, wake: undefined };
    let boxes = open.get(site);
    if (!boxes) open.set(site, (boxes = new Set()));
    boxes.add(box);
    return {
      take() {
        const out = { entries: box.entries, missed: box.missed };
        box.entries = [];
        box.missed = false;
        return out;
      },
      wait: (ms) =>
        box.missed || box.entries.length > 0
          ? Promise.resolve(true)
          : new Promise((resolve) => {
              const timer = setTimeout(() => {
                box.wake = undefined;
                resolve(false);
              }, ms);
              timer.unref();
              box.wake = () => {
                box.wake = undefined;
                clearTimeout(timer);
                resolve(true);
              };
            }),
      close() {
        box.wake?.();
        boxes.delete(box);
        if (boxes.size === 0 && open.get(site) === boxes) open.delete(site);
      },
    };
  };
}
