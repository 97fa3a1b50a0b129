/**
 * `rate-limit: {per-second, burst}` (CONTRACT §12): every attempt of the exporter takes a
 * token of its bucket first. The bucket lives in the bus (bus.ts rateToken: a Lua token bucket
 * in the site's Redis, so every process of the site shares it; in memory on the embedded bus);
 * the answer says how long to wait for the next token. When the bus cannot be asked, the
 * attempt waits and asks again (the limit is never exceeded for an outage).
 */
import type { Bus } from '../bus/bus.js';
import type { Clock } from '../lib/clock.js';
import { log } from '../lib/log.js';

export class RateLimit {
  constructor(
    private readonly bus: Bus,
    private readonly name: string,
    private readonly site: string,
    private readonly perSecond: number,
    private readonly burst: number,
    private readonly clock: Clock,
  ) {}

  /** Resolves true once a token is taken, false when `stopping` aborted first. */
  /** `onWait`: told when the attempt will go each time it has to wait for a token. */
  async take(stopping: AbortSignal, onWait?: (untilMs: number) => void): Promise<boolean> {
    while (!stopping.aborted) {
      let wait: number;
      try {
        wait = await this.bus.rateToken(this.name, this.site, this.perSecond, this.burst);
      } catch (err) {
        log('debug', 'exporter: rate-limit bucket unreachable', { exporter: this.name, error: String(err) });
        wait = 100;
      }
      if (wait <= 0) return true;
      onWait?.(this.clock.now() + wait);
      await this.clock.sleep(wait, stopping);
    }
    return false;
  }
}
