/**
 * `max-in-flight: auto`: an adaptive concurrency limit after Vector's ARC (adaptive request
 * concurrency). The limit starts at 1. Each window (about one mean round-trip time) compares
 * the window's mean RTT with a moving average of earlier windows: back-pressure in the window
 * (a 429 or 503, a timeout or a refused connection) or an RTT above that average by more than
 * `deviationScale` standard deviations multiplies the limit by `decreaseRatio`; a window that
 * used the whole limit with an RTT not above the average adds one. So the limit grows while
 * the endpoint keeps up and backs off as soon as its queue grows.
 */
import { adaptiveMax } from '../resources/webhook/spec.js';

const decreaseRatio = 0.9;
const ewmaAlpha = 0.4;
const deviationScale = 2.5;

export class AdaptiveLimit {
  limit = 1;
  private pastMean = 0;
  private pastVar = 0;
  private haveTrend = false;
  private windowStart = 0;
  private sum = 0;
  private n = 0;
  private reachedLimit = false;
  private backPressure = false;

  constructor(
    private readonly now: () => number = () => performance.now(),
    readonly max = adaptiveMax,
  ) {}

  /** Called when a request starts with `inFlight` requests running (itself included). */
  started(inFlight: number): void {
    if (inFlight >= this.limit) this.reachedLimit = true;
  }

  /** Called with each response: its RTT and whether it signals back-pressure. */
  done(rttMs: number, backPressure: boolean): void {
    const now = this.now();
    if (this.n === 0 && !this.backPressure) this.windowStart = now - rttMs;
    if (backPressure) this.backPressure = true;
    else {
      this.sum += rttMs;
      this.n++;
    }
    const windowMs = this.haveTrend ? this.pastMean : rttMs;
    if (now - this.windowStart < windowMs) return;
    this.adjust(now);
  }

  private adjust(now: number): void {
    const current = this.n > 0 ? this.sum / this.n : undefined;
    if (this.backPressure) {
      this.limit = Math.max(1, Math.floor(this.limit * decreaseRatio));
    } else if (current !== undefined) {
      if (!this.haveTrend) {
        this.pastMean = current;
        this.haveTrend = true;
        if (this.reachedLimit) this.limit = Math.min(this.max, this.limit + 1);
      } else {
        const threshold = deviationScale * Math.sqrt(this.pastVar);
        if (current > this.pastMean + threshold) this.limit = Math.max(1, Math.floor(this.limit * decreaseRatio));
        else if (this.reachedLimit && current <= this.pastMean) this.limit = Math.min(this.max, this.limit + 1);
        const diff = current - this.pastMean;
        this.pastMean += ewmaAlpha * diff;
        this.pastVar = (1 - ewmaAlpha) * (this.pastVar + ewmaAlpha * diff * diff);
      }
    }
    this.windowStart = now;
    this.sum = 0;
    this.n = 0;
    this.reachedLimit = false;
    this.backPressure = false;
  }
}
