/**
 * Operational state of one exporter: status, start time, consumed topics, last error,
 * counters, in-flight and `topic-lag: [{topic, lag}]`, where lag is the topic's backlog for
 * the exporter's group (entries not yet read plus read but not acknowledged), refreshed by
 * the exporter about every second. None of these names is a configuration field's: the API
 * shows them beside the configuration unchanged. `version` increases at every change so the
 * publisher writes only changed states. Failed attempts are logged here: the first at once,
 * then at most one summary line a second; each change of status is logged too.
 */
import { countedOutcomes, type OutcomeCounts } from '../bus/bus.js';
import { isObject, type JsonObject } from '../lib/json.js';
import { log } from '../lib/log.js';

export type Status = 'starting' | 'ready' | 'retrying' | 'paused' | 'error' | 'stopped';

export type Counter = 'delivered' | 'dropped' | 'ignored' | 'filtered' | 'failed-attempts';
const counterNames: readonly Counter[] = ['delivered', 'dropped', 'ignored', 'filtered', 'failed-attempts'];

/** One failed POST attempt, as logged. */
export type FailedAttempt = {
  topic: string;
  id: string;
  attempt: number;
  error: string;
  status?: number;
  /** The first 200 bytes of the response body. */
  body?: string;
};

/** Summary lines of failed attempts are at least this far apart. */
export const failureLogIntervalMs = 1000;

export class ExporterState {
  status: Status = 'starting';
  startTime: number;
  lastError: string | undefined;
  lastErrorTime: number | undefined;
  inFlight = 0;
  version = 1;
  /** The adaptive in-flight limit with max-in-flight auto (delivery controls). */
  inFlightLimit: (() => number) | undefined;
  /** When the status became `retrying` (shown as `failing-since` while it lasts). */
  failingSince: number | undefined;
  readonly counters: Record<Counter, number> = {
    delivered: 0,
    dropped: 0,
    ignored: 0,
    filtered: 0,
    'failed-attempts': 0,
  };
  private readonly lag = new Map<string, number>();
  /** Per topic, the outcomes the bus counted with the acks; `delivered`… are their sums. */
  private readonly topicCounts = new Map<string, OutcomeCounts>();
  /** Messages whose last attempt failed and that are waiting for another. */
  private failing = 0;
  /**
   * When each pending retry will be attempted (a back-off sleep, or the end of an open circuit
   * breaker's cool-down a message waits for): `next-attempt-time` is the earliest. A time is
   * removed as its wait ends, so the field is never a past time while nothing is attempted.
   */
  private readonly scheduled = new Map<number, number>();
  private nextTicket = 0;
  private lastFailureLog = -Infinity;
  private unlogged = 0;
  private lastUnlogged: FailedAttempt | undefined;

  constructor(
    now: number,
    private readonly who: { tenant: string; exporter: string } = { tenant: '', exporter: '' },
  ) {
    this.startTime = now;
  }

  setStatus(status: Status, now?: number): void {
    if (status === 'starting') this.failing = 0;
    if (status === this.status) return;
    if (this.status === 'retrying') this.flushFailures();
    if (status === 'retrying') this.failingSince ??= now ?? Date.now();
    else this.failingSince = undefined;
    log(status === 'error' || status === 'retrying' ? 'warn' : 'info', 'exporter status changed', {
      ...this.who,
      from: this.status,
      to: status,
      ...(status === 'error' || status === 'retrying' ? { 'last-error': this.lastError ?? null } : {}),
    });
    this.status = status;
    if (status === 'starting' && now !== undefined) this.startTime = now;
    this.version++;
  }

  error(text: string, now: number): void {
    this.lastError = text;
    this.lastErrorTime = now;
    this.version++;
  }

  /** Circuit breakers: an origin opened (`retrying`, with the reason), or every one closed again. */
  breakerChanged(open: boolean, reason: string | undefined, now: number): void {
    if (open) {
      if (reason) this.error(reason, now);
      this.setStatus('retrying', now);
    } else if (this.status === 'retrying' && this.failing === 0) this.setStatus('ready', now);
    this.version++;
  }

  /** A retry will be attempted at `at` (ms); returns the ticket to give `attemptDue` when the wait ends. */
  attemptScheduled(at: number): number {
    const ticket = ++this.nextTicket;
    this.scheduled.set(ticket, at);
    this.version++;
    return ticket;
  }

  attemptDue(ticket: number): void {
    if (this.scheduled.delete(ticket)) this.version++;
  }

  /** The earliest pending retry (ms), or undefined when none waits. */
  nextAttemptTime(): number | undefined {
    let next: number | undefined;
    for (const at of this.scheduled.values()) if (next === undefined || at < next) next = at;
    return next;
  }

  /**
   * The bus's totals of one topic (after an ack, or read at open): `delivered`, `dropped`,
   * `ignored` and `filtered` are the sums over the consumed topics, so they are exact across a
   * kill -9 and shared by every process of the site.
   */
  setTopicCounts(topic: string, counts: OutcomeCounts): void {
    this.topicCounts.set(topic, counts);
    this.sumCounts();
  }

  private sumCounts(): void {
    for (const o of countedOutcomes) {
      let sum = 0;
      for (const c of this.topicCounts.values()) sum += c[o];
      this.counters[o] = sum;
    }
    this.version++;
  }

  /**
   * `failed-attempts` of a state published before (a process restart): counting goes on from
   * there. The other counters come from the bus (setTopicCounts).
   */
  restoreCounters(saved: unknown): void {
    if (!isObject(saved)) return;
    for (const c of ['failed-attempts'] as const) {
      const v = saved[c];
      if (typeof v === 'number' && Number.isSafeInteger(v) && v > this.counters[c]) this.counters[c] = v;
    }
    this.version++;
  }

  /** A POST attempt failed; `willRetry` when the message waits for another attempt. */
  attemptFailed(a: FailedAttempt, now: number, first: boolean): void {
    this.counters['failed-attempts']++;
    this.error(a.error, now);
    if (first) {
      this.failing++;
      if (this.status === 'ready') this.setStatus('retrying', now);
    }
    if (now - this.lastFailureLog >= failureLogIntervalMs) {
      this.lastFailureLog = now;
      const summary = this.unlogged > 0 ? { 'not-logged-since': this.unlogged } : {};
      this.unlogged = 0;
      this.lastUnlogged = undefined;
      log('warn', 'exporter: POST attempt failed', { ...this.who, ...summary, ...attemptFields(a) });
    } else {
      this.unlogged++;
      this.lastUnlogged = a;
    }
  }

  /**
   * A message is held back by something other than a POST (its dead-letter append fails): as a
   * failing message, `retrying` with the reason in `last-error`, until retryEnded.
   */
  heldBack(error: string, now: number, first: boolean): void {
    this.error(error, now);
    if (!first) return;
    this.failing++;
    if (this.status === 'ready') this.setStatus('retrying', now);
  }

  /**
   * A message that had failed is handled now (delivered, dropped: `handled`) or given up at a
   * stop (not handled: the status stays until the stop sets `stopped`, never `ready` between).
   */
  retryEnded(now?: number, handled = true): void {
    if (this.failing > 0) this.failing--;
    if (handled && this.failing === 0 && this.status === 'retrying') {
      this.setStatus('ready', now);
      // The next outage's first failure is logged at once.
      this.lastFailureLog = -Infinity;
    }
  }

  /** Logs the failed attempts not logged yet, as one line. */
  private flushFailures(): void {
    if (this.unlogged === 0 || !this.lastUnlogged) return;
    log('warn', 'exporter: POST attempts failed', {
      ...this.who,
      'failed-attempts': this.unlogged,
      last: attemptFields(this.lastUnlogged),
    });
    this.unlogged = 0;
    this.lastUnlogged = undefined;
  }

  addTopic(topic: string): void {
    if (!this.lag.has(topic)) {
      this.lag.set(topic, 0);
      this.version++;
    }
  }

  removeTopic(topic: string): void {
    if (this.lag.delete(topic)) this.version++;
    if (this.topicCounts.delete(topic)) this.sumCounts();
  }

  setLag(topic: string, lag: number): void {
    if (!this.lag.has(topic) || this.lag.get(topic) === lag) return;
    this.lag.set(topic, lag);
    this.version++;
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
    for (const c of counterNames) out[c] = this.counters[c];
    out['in-flight'] = this.inFlight;
    if (this.inFlightLimit) out['in-flight-limit'] = this.inFlightLimit();
    const next = this.nextAttemptTime();
    if (next !== undefined) out['next-attempt-time'] = new Date(next).toISOString();
    if (this.failingSince !== undefined) out['failing-since'] = new Date(this.failingSince).toISOString();
    out['topic-lag'] = this.consumedTopics().map((topic) => ({ topic, lag: this.lag.get(topic)! }));
    return out;
  }
}

function attemptFields(a: FailedAttempt): Record<string, unknown> {
  return {
    topic: a.topic,
    id: a.id,
    attempt: a.attempt,
    ...(a.status !== undefined ? { status: a.status } : { error: a.error }),
    ...(a.body !== undefined ? { body: a.body } : {}),
  };
}
