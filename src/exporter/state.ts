/**
 * Operational state of one exporter: status, start time, consumed
 * topics, last error and counters. Per consumed topic we report `topics: [{name, lag}]`,
 * where lag is the number of entries of that topic not yet read by the exporter's group
 * (Redis's group lag after the last read) plus the read entries not yet handled.
 * `version` increases at every change so the publisher writes only changed states.
 */
import type { JsonObject } from '../json.js';

export type Status = 'starting' | 'ready' | 'error' | 'stopped';

export type Counter = 'delivered' | 'dropped' | 'ignored' | 'filtered' | 'failed-attempts';

export class ExporterState {
  status: Status = 'starting';
  startTime: number;
  lastError: string | undefined;
  lastErrorTime: number | undefined;
  inFlight = 0;
  version = 1;
  readonly counters: Record<Counter, number> = {
    delivered: 0,
    dropped: 0,
    ignored: 0,
    filtered: 0,
    'failed-attempts': 0,
  };
  private readonly lag = new Map<string, { unread: number; unhandled: number }>();

  constructor(now: number) {
    this.startTime = now;
  }

  setStatus(status: Status, now?: number): void {
    if (status === this.status) return;
    this.status = status;
    if (status === 'starting' && now !== undefined) this.startTime = now;
    this.version++;
  }

  error(text: string, now: number): void {
    this.lastError = text;
    this.lastErrorTime = now;
    this.version++;
  }

  count(counter: Counter): void {
    this.counters[counter]++;
    this.version++;
  }

  addTopic(topic: string): void {
    if (!this.lag.has(topic)) {
      this.lag.set(topic, { unread: 0, unhandled: 0 });
      this.version++;
    }
  }

  removeTopic(topic: string): void {
    if (this.lag.delete(topic)) this.version++;
  }

  setUnread(topic: string, unread: number | undefined): void {
    const l = this.lag.get(topic);
    if (!l || unread === undefined || l.unread === unread) return;
    l.unread = unread;
    this.version++;
  }

  unhandled(topic: string, delta: number): void {
    const l = this.lag.get(topic);
    if (l) {
      l.unhandled += delta;
      this.version++;
    }
  }

  consumedTopics(): string[] {
    return [...this.lag.keys()].sort();
  }

  toJson(): JsonObject {
    const out: JsonObject = {
      status: this.status,
      'start-time': new Date(this.startTime).toISOString(),
      'consumed-topics': this.consumedTopics(),
    };
    if (this.lastError !== undefined) out['last-error'] = this.lastError;
    if (this.lastErrorTime !== undefined) out['last-error-time'] = new Date(this.lastErrorTime).toISOString();
    for (const [k, v] of Object.entries(this.counters)) out[k] = v;
    out['in-flight'] = this.inFlight;
    out.topics = this.consumedTopics().map((name) => {
      const l = this.lag.get(name)!;
      return { name, lag: l.unread + Math.max(0, l.unhandled) };
    });
    return out;
  }
}
