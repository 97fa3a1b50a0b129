/**
 * The last 15 minutes of each webhook exporter, kept in memory so that a freshly opened status
 * page (/ui/) can plot throughput and lag at once: every `intervalMs` (5 s) one sample of its
 * `delivered` counter and its lag (180 samples), and its recent errors (the last 20 distinct
 * `last-error`s). The states are those of this process's runtime, which runs every exporter
 * placed at its site. A process without a runtime (the `fetch` handler) reads the states the
 * site's processes publish in the store's kv area: it lists their keys (a SCAN of the whole
 * keyspace on Redis) at every sample, or, when a listing took over a tenth of `intervalMs`
 * (a large keyspace), again only ten times that long after it, reading the keys it knows in
 * between.
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

/** Without a runtime, the state keys are listed again after at least this many times the last listing's duration. */
const listingPace = 10;
type Series = { samples: Sample[]; errors: Array<{ time: number; error: string }>; lastErrorKey?: string };

export class DeliveredHistory {
  readonly points: number;
  private readonly series = new Map<string, Series>();
  private timer: ReturnType<typeof setInterval> | undefined;
  private sampling = false;
  /** Without a runtime: this site's state keys as last listed, and when to list them again. */
  private stateKeys: string[] = [];
  private listAfter = -Infinity;

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
      const live = this.runtime?.exporterStates?.();
      if (live)
        for (const e of live) {
          const id = `${e.tenant}/${e.name}`;
          seen.add(id);
          this.add(id, time, e.state);
        }
      else
        for (const key of await this.siteStateKeys(time)) {
          const k = parseWebhookStateKey(key)!;
          const state = parse(await this.store.kvGet(key));
          if (!state) continue;
          const id = `${k.tenant}/${k.name}`;
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

  /** This site's state keys: listed again once `listAfter` has passed (paced by a slow listing's own duration). */
  private async siteStateKeys(time: number): Promise<string[]> {
    if (time < this.listAfter) return this.stateKeys;
    const keys = await this.store.kvKeys(kvPrefix.webhookState);
    const took = this.now() - time;
    this.stateKeys = keys.filter((key) => parseWebhookStateKey(key)?.site === this.site);
    // A quick listing is made again at every sample; a slow one waits ten times its duration.
    this.listAfter = listingPace * took > this.intervalMs ? time + listingPace * took : -Infinity;
    return this.stateKeys;
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
