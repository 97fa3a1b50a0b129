/**
 * Topic discovery for `topic-patterns`: lists the existing topics every ~1.5 s while anyone
 * listens, and tells listeners the whole set when it changed (new matching streams are
 * picked up within 3 s). Listing is backend specific (SCAN on Redis).
 */
import { log } from '../lib/log.js';
import { errorText } from '../lib/error-text.js';

export const discoveryIntervalMs = 1500;

export class Discovery {
  private readonly listeners = new Set<(topics: ReadonlySet<string>) => void>();
  private current: ReadonlySet<string> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private running = false;

  constructor(private readonly list: () => Promise<string[]>) {}

  onTopics(listener: (topics: ReadonlySet<string>) => void): () => void {
    this.listeners.add(listener);
    if (this.current) listener(this.current);
    if (!this.timer) {
      this.timer = setInterval(() => void this.poll(), discoveryIntervalMs);
      this.timer.unref();
      void this.poll();
    }
    return () => {
      this.listeners.delete(listener);
      if (this.listeners.size === 0 && this.timer) {
        clearInterval(this.timer);
        this.timer = undefined;
        this.current = undefined;
      }
    };
  }

  /** Also called by backends that know a topic appeared (the embedded bus on produce). */
  async poll(): Promise<void> {
    if (this.running || this.listeners.size === 0) return;
    this.running = true;
    try {
      const topics = new Set(await this.list());
      const prev = this.current;
      const same = prev !== undefined && prev.size === topics.size && [...topics].every((t) => prev.has(t));
      if (!same) {
        this.current = topics;
        for (const l of this.listeners) l(topics);
      }
    } catch (err) {
      log('debug', 'bus: topic discovery failed', { error: errorText(err) });
    } finally {
      this.running = false;
    }
  }

  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.listeners.clear();
  }
}
