/**
 * `topic-lag` of one exporter: asks the bus for each consumed topic's backlog (unread plus
 * unacknowledged, for the exporter's group) about every second, whatever the message loop is
 * doing (it may be blocked on a failing POST). Skipped while every backlog is 0 and nothing was
 * read since (`stale()`), so idle exporters cost nothing. A paused exporter has one too, with
 * nothing reading: its lag is what the producers added since it stopped.
 */
import type { Bus } from '../bus/bus.js';
import { log } from '../lib/log.js';
import { errorText } from '../lib/error-text.js';
import type { ExporterState } from './state.js';

/** How often the backlog of each consumed topic is asked for while it is not 0. */
const lagRefreshMs = 1000;

export class LagMonitor {
  private timer: NodeJS.Timeout | undefined;
  /** Set when entries were read (or at start): the backlogs must be asked for again. */
  private isStale = true;
  private refreshing = false;

  constructor(
    private readonly bus: Bus,
    private readonly group: string,
    private readonly state: ExporterState,
    private readonly topics: () => Iterable<string>,
    /** Paused: nothing reads, so a backlog may grow at any time; it is asked for every second. */
    private readonly always = false,
  ) {}

  start(): this {
    this.timer = setInterval(() => void this.refresh(), lagRefreshMs);
    this.timer.unref();
    void this.refresh();
    return this;
  }

  /** Entries were read (or a topic was added): ask again at the next tick. */
  stale(): void {
    this.isStale = true;
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private async refresh(): Promise<void> {
    if ((!this.isStale && !this.always) || this.refreshing) return;
    this.refreshing = true;
    this.isStale = false;
    try {
      for (const topic of [...this.topics()]) {
        const lag = await this.bus.backlog(topic, this.group);
        if (lag === undefined) continue;
        this.state.setLag(topic, lag);
        if (lag > 0) this.isStale = true;
      }
    } catch (err) {
      this.isStale = true;
      log('debug', 'exporter: cannot read the backlog', { group: this.group, error: errorText(err) });
    } finally {
      this.refreshing = false;
    }
  }
}
