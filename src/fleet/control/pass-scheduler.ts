/**
 * When the projector runs its passes: on request, one at a time, coalesced. A request made
 * while a pass runs is served by the next one, which every request made meanwhile shares; a
 * request resolves once a pass that started after it has finished. A pass that lost a race
 * (or could not read at one revision) asks for another before its requests resolve; twenty in
 * a row go on after a short pause instead of in a tight loop. A failed pass resolves every
 * request at once (its callers are not held up) and makes the next pass a full one, which the
 * scheduler itself asks for after 0.1–1 s (doubling while passes keep failing): a failover of
 * Redis fails the passes of a few seconds, and the change that woke them is not announced
 * again, so waiting for the next change or the periodic resync could leave the sites behind for
 * up to its period. Once a pass succeeds after failures, one more full pass follows
 * `recoveredPassMs` later: commits made on the new primary before this process's change
 * subscription followed it announced nothing here.
 */
import { backoffDelay } from '../../lib/backoff.js';
import { errorText } from '../../lib/error-text.js';
import { repeatingLog } from '../../lib/log.js';

/** After a pass succeeded following failures: one more full pass this much later. */
const recoveredPassMs = 2000;

/** What a pass asks of the next: nothing, another, or another that looks at every site. */
export type PassOutcome = 'done' | 'again' | 'again-full';

export type PassScheduler = {
  /** Asks for a pass (`full`: one that looks at every site); resolves once one that started after the call finished. */
  request(full?: boolean): Promise<void>;
  readonly stopped: boolean;
  /** No more passes; resolves once the running one finished and every request is resolved. */
  stop(): Promise<void>;
};

export function createPassScheduler(pass: (full: boolean) => Promise<PassOutcome>): PassScheduler {
  let running: Promise<void> | undefined;
  let requested = 0;
  const waiters: Array<{ ticket: number; resolve: () => void }> = [];
  let stopped = false;
  let wantFull = true;
  /** Passes failed in a row; the pending retry (or the full pass after the recovery). */
  let failures = 0;
  /** A store that stays unreachable fails a pass every second: logged as it starts, then every 30 s. */
  const failedLog = repeatingLog();
  let retry: NodeJS.Timeout | undefined;

  function later(ms: number): void {
    if (retry || stopped) return;
    retry = setTimeout(() => {
      retry = undefined;
      void request(true);
    }, ms);
    retry.unref();
  }

  function settle(upTo: number): void {
    for (let i = waiters.length - 1; i >= 0; i--) if (waiters[i]!.ticket <= upTo) waiters.splice(i, 1)[0]!.resolve();
  }

  async function drain(): Promise<void> {
    for (let rounds = 0; waiters.length > 0 && !stopped; rounds++) {
      if (rounds >= 20) {
        // Twenty passes in a row each asking for another: go on shortly, not in a tight loop.
        setTimeout(() => void (running ??= drain().finally(() => (running = undefined))), 50).unref();
        return;
      }
      const upTo = requested;
      const f = wantFull;
      wantFull = false;
      let outcome: PassOutcome;
      try {
        outcome = await pass(f);
      } catch (err) {
        wantFull = true;
        const wait = backoffDelay(failures++, { baseMs: 100, maxMs: 1000 });
        failedLog('warn', 'fleet projection failed; retrying', { error: errorText(err), retryInMs: wait, failures });
        settle(Infinity); // every caller hears of it now; the retry below catches up
        later(wait);
        return;
      }
      if (failures > 0) {
        failures = 0;
        failedLog.ended();
        later(recoveredPassMs);
      }
      if (outcome === 'again-full') wantFull = true;
      // A pass that lost a race or could not read at one revision asks for another first.
      if (outcome === 'done') settle(upTo);
    }
  }

  function request(full = true): Promise<void> {
    if (stopped) return Promise.resolve();
    if (full) wantFull = true;
    const ticket = ++requested;
    const done = new Promise<void>((resolve) => waiters.push({ ticket, resolve }));
    if (!running) running = drain().finally(() => (running = undefined));
    return done;
  }

  return {
    request,
    get stopped() {
      return stopped;
    },
    async stop() {
      stopped = true;
      clearTimeout(retry);
      await running;
      settle(Infinity);
    },
  };
}
