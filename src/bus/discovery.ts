/**
 * Topic discovery for `topic-patterns`: lists the existing topics while anyone listens, and
 * tells listeners the whole set when it changed. Listing is backend specific (SCAN on Redis,
 * whose cost grows with the whole keyspace: about 0.5 ms of Redis a SCAN call of 500 keys, so
 * a pass over a million keys keeps Redis busy for about a second). The passes are therefore
 * paced by their own duration: the next one starts `discoveryIntervalMs` after the last one
 * ended, or `discoveryPace` times the last one's duration when that is longer, so listing takes
 * at most about a tenth of the time. New matching streams are picked up within about 1.5 s plus
 * a pass on a small keyspace, and within about eleven passes' time on a large one.
 */
import { log } from '../lib/log.js';
import { errorText } from '../lib/error-text.js';

export const discoveryIntervalMs = 1500;
/** The wait after a pass is at least this many times the pass's own duration. */
export const discoveryPace = 10;

/** When the next pass runs: injectable so tests see the waits without sleeping. */
export type PassTimer = {
  now(): number;
  after(ms: number, run: () => void): { cancel(): void };
};

const systemPassTimer: PassTimer = {
  now: () => performance.now(),
  after(ms, run) {
    const t = setTimeout(run, ms);
    t.unref();
    return { cancel: () => clearTimeout(t) };
  },
};

export class Discovery {
  private readonly listeners = new Set<(topics: ReadonlySet<string>) => void>();
  private current: ReadonlySet<string> | undefined;
  /** Set while anyone listens: the passes go on. */
  private active = false;
  private next: { cancel(): void } | undefined;
  private running = false;
  /** The longest wait logged so far: the pacing is logged when it first slows the passes, and when it slows them more than twice further. */
  private loggedWaitMs = discoveryIntervalMs;

  constructor(
    private readonly list: () => Promise<string[]>,
    private readonly timer: PassTimer = systemPassTimer,
  ) {}

  onTopics(listener: (topics: ReadonlySet<string>) => void): () => void {
    this.listeners.add(listener);
    if (this.current) listener(this.current);
    if (!this.active) {
      this.active = true;
      void this.pass();
    }
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0) this.stopPasses();
    };
  }

  /** One pass, then the next one scheduled after a wait paced by this one's duration. */
  private async pass(): Promise<void> {
    this.next = undefined;
    const started = this.timer.now();
    await this.poll();
    if (!this.active || this.next) return;
    const tookMs = this.timer.now() - started;
    const waitMs = Math.max(discoveryIntervalMs, Math.round(discoveryPace * tookMs));
    if (waitMs > 2 * this.loggedWaitMs) {
      this.loggedWaitMs = waitMs;
      log('info', 'bus: listing the topics for topic-patterns is slow; passes are spaced out', {
        passMs: Math.round(tookMs),
        nextInMs: waitMs,
      });
    }
    this.next = this.timer.after(waitMs, () => void this.pass());
  }

  /** Also called by backends that know a topic appeared (the embedded bus on produce). */
  async poll(): Promise<void> {
    if (this.running || this.listeners.size === 0) return;
    this.running = true;
    try {
      const topics = new Set(await this.list());
      const prev = this.current;
      const same = prev !== undefined && prev.size === topics.size && [...topics].every((t) => prev.has(t));
      if (!same && this.listeners.size > 0) {
        this.current = topics;
        for (const l of this.listeners) l(topics);
      }
    } catch (err) {
      log('debug', 'bus: topic discovery failed', { error: errorText(err) });
    } finally {
      this.running = false;
    }
  }

  private stopPasses(): void {
    this.active = false;
    this.next?.cancel();
    this.next = undefined;
    this.current = undefined;
  }

  close(): void {
    this.stopPasses();
    this.listeners.clear();
  }
}
