/**
 * The last 15 minutes of each webhook exporter, kept in memory so that a freshly opened status
 * page (/ui/) can plot throughput and lag at once: every `intervalMs` (5 s) one sample of its
 * `delivered` counter and its lag (180 samples), and its recent errors (the last 20 distinct
 * `last-error`s). The states are read where the API reads them: the runtime of this process,
 * else the store's kv area (published by the process that runs the exporter).
 *
 * `GET /v1/state/volga/webhooks/<name>/history` (history-routes.ts) →
 * `{name, interval-seconds, samples: [{time, delivered, lag}], errors: [{time, error}]}` (`lag`:
 * the backlog summed over its topics, `topic-lag`); its
 * authorization is that of reading the exporter's state.
 */
import { isObject, type JsonObject } from '../lib/json.js';
import { log } from '../lib/log.js';
import { kvPrefix, parseWebhookStateKey } from '../store/keys.js';
import type { Store } from '../store/store.js';
import type { RuntimeView } from './runtime-view.js';
import { errorText } from '../lib/error-text.js';

export type Sample = { time: number; delivered: number; lag: number };
type Series = { samples: Sample[]; errors: Array<{ time: number; error: string }>; lastErrorKey?: string };

export class DeliveredHistory {
  readonly points: number;
  private readonly series = new Map<string, Series>();
  private timer: ReturnType<typeof setInterval> | undefined;
  private sampling = false;

  constructor(
    private readonly store: Store,
    /** The SITE of this process: the states it samples are this site's. */
    private readonly site: string,
    private readonly runtime: RuntimeView | undefined,
    readonly intervalMs = 5000,
    windowMs = 15 * 60_000,
    private readonly now: () => number = Date.now,
  ) {
    this.points = Math.max(2, Math.round(windowMs / intervalMs));
  }

  start(): this {
    void this.sample();
    this.timer = setInterval(() => void this.sample(), this.intervalMs);
    this.timer.unref();
    return this;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Takes one sample of every exporter whose state is published. */
  async sample(): Promise<void> {
    if (this.sampling) return;
    this.sampling = true;
    try {
      const time = this.now();
      const seen = new Set<string>();
      for (const key of await this.store.kvKeys(kvPrefix.webhookState)) {
        const k = parseWebhookStateKey(key);
        if (!k || k.site !== this.site) continue;
        const id = `${k.tenant}/${k.name}`;
        const state = this.runtime?.exporterState(k.tenant, k.name) ?? parse(await this.store.kvGet(key));
        if (!state) continue;
        seen.add(id);
        this.add(id, time, state);
      }
      for (const id of [...this.series.keys()]) if (!seen.has(id)) this.series.delete(id);
    } catch (err) {
      log('debug', 'history: cannot sample exporter states', { error: errorText(err) });
    } finally {
      this.sampling = false;
    }
  }

  private add(id: string, time: number, state: JsonObject): void {
    let s = this.series.get(id);
    if (!s) {
      s = { samples: [], errors: [] };
      this.series.set(id, s);
    }
    const delivered = typeof state.delivered === 'number' ? state.delivered : 0;
    s.samples.push({ time, delivered, lag: lagOf(state) });
    if (s.samples.length > this.points) s.samples.splice(0, s.samples.length - this.points);
    const error = state['last-error'];
    if (typeof error === 'string') {
      const at = typeof state['last-error-time'] === 'string' ? Date.parse(state['last-error-time']) : time;
      const errorKey = `${at} ${error}`;
      if (errorKey !== s.lastErrorKey) {
        s.lastErrorKey = errorKey;
        s.errors.push({ time: Number.isFinite(at) ? at : time, error });
        if (s.errors.length > 20) s.errors.shift();
      }
    }
  }

  /** The history of one exporter (empty before its first sample). */
  of(tenant: string, name: string): JsonObject {
    const s = this.series.get(`${tenant}/${name}`);
    return {
      name,
      'interval-seconds': this.intervalMs / 1000,
      samples: (s?.samples ?? []).map((p) => ({
        time: new Date(p.time).toISOString(),
        delivered: p.delivered,
        lag: p.lag,
      })),
      errors: (s?.errors ?? []).map((e) => ({ time: new Date(e.time).toISOString(), error: e.error })),
    };
  }
}

/** The backlog summed over the exporter's topics (`topic-lag: [{topic, lag}]`). */
function lagOf(state: JsonObject): number {
  const list = Array.isArray(state['topic-lag']) ? state['topic-lag'] : [];
  let sum = 0;
  for (const t of list) if (isObject(t) && typeof t.lag === 'number') sum += t.lag;
  return sum;
}

function parse(raw: string | undefined): JsonObject | undefined {
  if (raw === undefined) return undefined;
  try {
    const v: unknown = JSON.parse(raw);
    return isObject(v) ? v : undefined;
  } catch {
    return undefined;
  }
}
