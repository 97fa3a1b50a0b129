/**
 * Per-origin circuit breakers of one exporter. After `threshold` failed attempts in a row to
 * one origin (scheme, host, port), the origin is open: attempts to it wait for a cool-down
 * that starts at the exporter's `retry-interval` and doubles after each failed probe up to
 * `max-retry-interval`. After the cool-down one attempt (the probe) goes through while the
 * others keep waiting; its success closes the breaker, its failure opens it again for longer.
 * Other origins are not affected. Waiting uses the injected clock.
 */
import type { Clock } from '../lib/clock.js';

export const breakerThreshold = 5;
/** Origins with failures but closed breakers kept at most (see record). */
const maxOrigins = 10_000;

type Origin = {
  failures: number;
  state: 'closed' | 'open' | 'half-open';
  cooldownMs: number;
  /** When the current cool-down ends (for the state's next-attempt-time). */
  until: number;
  probing: boolean;
  waiters: Array<() => void>;
};

export type BreakerEvents = {
  /** An origin opened (or reopened) until `until`; called again with undefined once all are closed. */
  onChange(nextAttempt: number | undefined, reason: string | undefined): void;
};

export class Breakers {
  /** Origins that failed since their last success (a closed origin with no failures has none). */
  private readonly origins = new Map<string, Origin>();
  private openCount = 0;
  private readonly closed = new AbortController();

  constructor(
    private readonly clock: Clock,
    private readonly baseMs: number,
    private readonly maxMs: number,
    private readonly events: BreakerEvents,
  ) {}

  /** How many origins are remembered (their failures since their last success). */
  get size(): number {
    return this.origins.size;
  }

  /** True when the attempt may go now (no wait). */
  ready(origin: string): boolean {
    const o = this.origins.get(origin);
    return o === undefined || o.state === 'closed';
  }

  /** When the open origin's cool-down ends (ms), or undefined when it is not open. */
  openUntil(origin: string): number | undefined {
    const o = this.origins.get(origin);
    return o?.state === 'open' ? o.until : undefined;
  }

  /**
   * Waits until an attempt to `origin` may go: 'go' at once when closed; when open, 'probe'
   * once the cool-down ended and this caller is the single probe. 'stopped' when `stopping`
   * aborted.
   */
  async admit(origin: string, stopping: AbortSignal): Promise<'go' | 'probe' | 'stopped'> {
    for (;;) {
      if (stopping.aborted) return 'stopped';
      const o = this.origins.get(origin);
      if (!o || o.state === 'closed') return 'go';
      if (o.state === 'half-open' && !o.probing) {
        o.probing = true;
        return 'probe';
      }
      await new Promise<void>((resolve) => {
        const done = () => {
          stopping.removeEventListener('abort', done);
          resolve();
        };
        o.waiters.push(done);
        stopping.addEventListener('abort', done, { once: true });
      });
    }
  }

  /**
   * The outcome of an attempt; `probe` when `admit` made it the probe. Failures of attempts
   * that started before the breaker opened do not count as a failed probe.
   */
  record(origin: string, ok: boolean, reason?: string, probe = false): void {
    let o = this.origins.get(origin);
    if (ok) {
      if (!o) return;
      const wasOpen = o.state !== 'closed';
      o.failures = 0;
      o.probing = false;
      if (wasOpen) {
        o.state = 'closed';
        o.cooldownMs = 0;
        this.openCount--;
        this.wake(o);
        if (this.openCount === 0) this.events.onChange(undefined, undefined);
      }
      // A closed origin without failures is what no entry means: forget it.
      if (o.waiters.length === 0) this.origins.delete(origin);
      return;
    }
    if (!o) {
      // Templated URLs may reach any number of origins: keep the open ones and at most
      // maxOrigins others (their few failures in a row are forgotten first).
      if (this.origins.size >= maxOrigins)
        for (const [key, other] of this.origins)
          if (other.state === 'closed' && other.waiters.length === 0) this.origins.delete(key);
      o = { failures: 0, state: 'closed', cooldownMs: 0, until: 0, probing: false, waiters: [] };
      this.origins.set(origin, o);
    }
    o.failures++;
    if (probe && o.state === 'half-open' && o.probing) {
      o.probing = false;
      this.open(origin, o, Math.min(this.maxMs, Math.max(1, o.cooldownMs * 2)), reason);
    } else if (o.state === 'closed' && o.failures >= breakerThreshold) {
      this.openCount++;
      this.open(origin, o, this.baseMs, reason);
    }
  }

  private open(origin: string, o: Origin, cooldownMs: number, reason: string | undefined): void {
    o.state = 'open';
    o.cooldownMs = cooldownMs;
    o.until = this.clock.now() + cooldownMs;
    this.events.onChange(
      o.until,
      // The reason names the origin as error texts show it (a host made from a vault value hidden).
      reason === undefined
        ? `circuit open for ${origin} after ${o.failures} failed attempts in a row`
        : `circuit open after ${o.failures} failed attempts in a row: ${reason}`,
    );
    void this.clock.sleep(cooldownMs, this.closed.signal).then(() => {
      if (o.state !== 'open' || this.closed.signal.aborted) return;
      o.state = 'half-open';
      this.wake(o);
    });
  }

  private wake(o: Origin): void {
    const w = o.waiters;
    o.waiters = [];
    for (const f of w) f();
  }

  /** Releases every waiter (the exporter stops). */
  close(): void {
    this.closed.abort();
    for (const o of this.origins.values()) this.wake(o);
  }
}
