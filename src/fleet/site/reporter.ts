/**
 * An edge site's state reports to its control plane (`POST /v1/fleet/sites/<name>/report`):
 * in full whenever the sync stream (re)connects, and when the state changes, coalesced so that
 * a site sends at most one report per `minIntervalMs` (changes in between fold into the next
 * one) and none when the state is the same as the last one the control plane acknowledged.
 */
import { canonicalJson, type JsonObject } from '../../lib/json.js';
import { log } from '../../lib/log.js';
import { errorText } from '../../lib/error-text.js';

export type ReporterOptions = {
  /** Builds the whole report (the site's state). */
  build: () => Promise<JsonObject>;
  /** Sends one report; resolves true when the control plane acknowledged it. */
  send: (report: JsonObject) => Promise<boolean>;
  minIntervalMs: number;
  now?: () => number;
  /** Runs `fn` after `ms` (setTimeout unless a test drives time); returns the cancel. */
  setTimer?: (fn: () => void, ms: number) => () => void;
};

const realTimer = (fn: () => void, ms: number) => {
  const t = setTimeout(fn, ms);
  t.unref?.();
  return () => clearTimeout(t);
};

export type Reporter = {
  /** Something the report shows may have changed. */
  changed(): void;
  /** The link is (again) up: send the whole state even if it looks unchanged. */
  connected(): void;
  stop(): void;
  /**
   * One last report of the state as it is now (sent when it differs from the last one
   * acknowledged), waiting `timeoutMs` at most; a site stopping cleanly calls it before stop.
   */
  flush(timeoutMs: number): Promise<void>;
};

export function startReporter(o: ReporterOptions): Reporter {
  const now = o.now ?? Date.now;
  const setTimer = o.setTimer ?? realTimer;
  let dirty = false;
  let force = false;
  let running = false;
  let stopped = false;
  let timer: (() => void) | undefined;
  let lastSent: string | undefined;
  let lastAt = -Infinity;

  const schedule = () => {
    if (stopped || timer || running || !(dirty || force)) return;
    timer = setTimer(() => void run(), Math.max(0, lastAt + o.minIntervalMs - now()));
  };

  const run = async () => {
    timer = undefined;
    running = true;
    const full = force;
    force = false;
    dirty = false;
    try {
      const report = await o.build();
      const text = canonicalJson(report);
      if (full || text !== lastSent) {
        lastAt = now();
        // Not acknowledged: the next change or reconnection sends it again.
        lastSent = (await o.send(report)) ? text : undefined;
      }
    } catch (err) {
      log('warn', 'fleet: could not build or send the state report', {
        error: errorText(err),
      });
      lastSent = undefined;
    } finally {
      running = false;
      schedule();
    }
  };

  return {
    changed() {
      dirty = true;
      schedule();
    },
    connected() {
      force = true;
      schedule();
    },
    stop() {
      stopped = true;
      timer?.();
      timer = undefined;
    },
    async flush(timeoutMs) {
      timer?.();
      timer = undefined;
      const deadline = now() + timeoutMs;
      while (running && now() < deadline) await new Promise((r) => setTimeout(r, 10));
      if (running || stopped) return;
      dirty = true;
      let cancel: (() => void) | undefined;
      await Promise.race([
        run(),
        new Promise<void>((r) => {
          cancel = setTimer(r, Math.max(0, deadline - now()));
        }),
      ]);
      cancel?.();
    },
  };
}
