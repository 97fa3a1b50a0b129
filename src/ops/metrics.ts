/**
 * Prometheus metrics (`GET /metrics`, text format, names prefixed `edgeplane_`), with
 * prom-client's registry and text encoding.
 *
 * What the hot paths pay: an API request costs one `performance.now()` and a few array
 * updates; a delivered message one histogram update. Exporter counters, in-flight and topic
 * lag are not counted twice: they are read from the runtime's state when scraped
 * (`exporter-source.ts`). Histograms are kept in `cells` (one per label set, resolved when a
 * route or exporter is set up, not per observation) because prom-client's `observe` hashes
 * its labels at every call (measured ~1 µs, 5 % of a cached GET); they are rendered through
 * the same registry as prom-client's own metrics.
 */
import { timingSafeEqual } from 'node:crypto';
import type { Context } from 'hono';
import { Hono } from 'hono';
import { collectDefaultMetrics, Counter, Gauge, Registry, type Metric } from 'prom-client';
import { errorStatus, ApiError } from '../lib/errors.js';
import type { AppEnv, FleetSample } from '../api/deps.js';
import { allowRoutes, on } from '../api/routing.js';
import { routes } from '../api/route-table.js';
import { exporterCounters, type ExporterSample } from './exporter-source.js';
import { bearerToken } from '../lib/bearer.js';

/** Seconds: API requests answer in well under a millisecond from memory, up to seconds for big writes. */
const apiBuckets = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Seconds: a webhook POST, retries included. */
const deliveryBuckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

type Labels = Record<string, string>;

type Cell = { labels: Labels; counts: Float64Array; sum: number; count: number };

/** A histogram whose label sets are resolved once (a `Cell`), then observed with no lookup. */
class CellHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly cells = new Map<string, Cell>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly bounds: readonly number[],
  ) {}

  cell(labels: Labels): Cell {
    const key = JSON.stringify(labels);
    let c = this.cells.get(key);
    if (!c) {
      c = { labels, counts: new Float64Array(this.bounds.length + 1), sum: 0, count: 0 };
      this.cells.set(key, c);
    }
    return c;
  }

  observe(c: Cell, value: number): void {
    const b = this.bounds;
    let i = 0;
    while (i < b.length && value > (b[i] as number)) i++;
    c.counts[i]!++;
    c.sum += value;
    c.count++;
  }

  /**
   * At each scrape, which label sets to show (set for the exporters' histogram: a deleted
   * exporter's series are not shown, where they stayed until the process restarted; its cell
   * stays, so an exporter that held it goes on counting, and one made again under that name too).
   */
  live: (() => ((labels: Labels) => boolean) | undefined) | undefined;

  /** Cells observed at least once (a route set up but never called is not shown). */
  used(): Cell[] {
    const show = this.live?.();
    return [...this.cells.values()].filter((c) => c.count > 0 && (!show || show(c.labels)));
  }

  /** prom-client's metric interface: the values as its own Histogram reports them. */
  get() {
    const values: Array<{ labels: Record<string, string | number>; value: number; metricName: string }> = [];
    for (const c of this.used()) {
      let acc = 0;
      this.bounds.forEach((le, i) => {
        acc += c.counts[i] as number;
        values.push({ labels: { ...c.labels, le }, value: acc, metricName: `${this.name}_bucket` });
      });
      values.push({ labels: { ...c.labels, le: '+Inf' }, value: c.count, metricName: `${this.name}_bucket` });
      values.push({ labels: c.labels, value: c.sum, metricName: `${this.name}_sum` });
      values.push({ labels: c.labels, value: c.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }

  reset(): void {
    this.cells.clear();
  }
}

const methods = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
const classes = ['1xx', '2xx', '3xx', '4xx', '5xx'] as const;

type Handler = (c: Context<AppEnv>) => Response | Promise<Response>;

export type Metrics = {
  readonly registry: Registry;
  /**
   * `handler`, counted and timed by route and status class. `route` is the matched pattern,
   * or a function of the request giving it (for a wildcard route: the resource template).
   */
  timed(route: string | ((c: Context<AppEnv>) => string), handler: Handler): Handler;
  /** For one exporter: what to call with each delivered message's latency in seconds. */
  deliveryObserver(tenant: string, exporter: string): (seconds: number) => void;
  /** Where scrapes read the exporters from. */
  exporters(source: () => ExporterSample[]): void;
  /** At a control plane: where scrapes read the fleet's series from (fleet/control/metrics-source.ts). */
  fleet(source: () => Promise<FleetSample>): void;
};

function statusOfError(err: unknown): number {
  return err instanceof ApiError ? errorStatus[err.code] : 500;
}

const noObservation = (): void => undefined;

/** `enabled: false` (METRICS_ENABLED=false): an empty registry and no instrumentation at all. */
export function createMetrics(opts: { enabled?: boolean } = {}): Metrics {
  if (opts.enabled === false)
    return {
      registry: new Registry(),
      timed: (_route, handler) => handler,
      deliveryObserver: () => noObservation,
      exporters: () => undefined,
      fleet: () => undefined,
    };
  const registry = new Registry();
  processSeries(registry);
  const requestSeconds = requestSeries(registry);
  const deliverySeconds = new CellHistogram(
    'edgeplane_exporter_delivery_duration_seconds',
    'Webhook delivery latency, from dispatch to the accepting answer (retries included)',
    deliveryBuckets,
  );
  registry.registerMetric(deliverySeconds as unknown as Metric);
  const setSource = exporterSeries(registry);
  let exporters: (() => ExporterSample[]) | undefined;
  deliverySeconds.live = () => {
    if (!exporters) return undefined;
    const now = new Set(exporters().map((s) => `${s.tenant}/${s.exporter}`));
    return (labels) => now.has(`${String(labels.tenant)}/${String(labels.exporter)}`);
  };
  return {
    registry,
    exporters: (fn) => {
      exporters = fn;
      setSource(fn);
    },
    fleet: fleetSeries(registry),
    deliveryObserver(tenant, exporter) {
      const cell = deliverySeconds.cell({ tenant, exporter });
      return (seconds) => deliverySeconds.observe(cell, seconds);
    },
    timed: (route, handler) => timedBy(requestSeconds, route, handler),
  };
}

/** prom-client's default metrics of the process (CPU, memory, event loop, GC). */
function processSeries(registry: Registry): void {
  collectDefaultMetrics({ register: registry, prefix: 'edgeplane_' });
  // prom-client also gives these three as gauges named `_total`, which `promtool check metrics`
  // rejects (a `_total` name is a counter's); the same counts by type remain, without the suffix.
  for (const name of ['active_handles_total', 'active_requests_total', 'active_resources_total'])
    registry.removeSingleMetric(`edgeplane_nodejs_${name}`);
}

/** The API request histogram, and its count shown as a counter too (at no extra cost). */
function requestSeries(registry: Registry): CellHistogram {
  const requestSeconds = new CellHistogram(
    'edgeplane_api_request_duration_seconds',
    'API request latency by route template, method and status class',
    apiBuckets,
  );
  const requests = {
    name: 'edgeplane_api_requests_total',
    help: 'API requests by route template, method and status class',
    type: 'counter',
    aggregator: 'sum',
    get: () => ({
      name: 'edgeplane_api_requests_total',
      help: 'API requests by route template, method and status class',
      type: 'counter',
      aggregator: 'sum',
      values: requestSeconds.used().map((c) => ({ labels: c.labels, value: c.count })),
    }),
    reset: () => undefined,
  };
  registry.registerMetric(requests as unknown as Metric);
  registry.registerMetric(requestSeconds as unknown as Metric);
  return requestSeconds;
}

/** The exporter series, read from the runtime's state when scraped: nothing per message. */
function exporterSeries(registry: Registry): Metrics['exporters'] {
  let source: () => ExporterSample[] = () => [];
  const labelNames = ['tenant', 'exporter'] as const;
  for (const counter of exporterCounters) {
    new Counter({
      name: `edgeplane_exporter_${counter.replace(/-/g, '_')}_total`,
      help: `${counter === 'failed-attempts' ? 'Delivery attempts that failed' : `Messages ${counter}`} per exporter at this site, all its processes together (the exporter's state counter, kept across restarts: aggregate with max by (tenant, exporter), not sum)`,
      labelNames,
      registers: [registry],
      collect() {
        this.reset();
        for (const s of source()) this.inc({ tenant: s.tenant, exporter: s.exporter }, s.counters[counter]);
      },
    });
  }
  new Gauge({
    name: 'edgeplane_exporter_in_flight',
    help: 'Messages being delivered now per exporter',
    labelNames,
    registers: [registry],
    collect() {
      this.reset();
      for (const s of source()) this.set({ tenant: s.tenant, exporter: s.exporter }, s.inFlight);
    },
  });
  new Gauge({
    name: 'edgeplane_exporter_topic_lag',
    help: 'Entries of a consumed topic not yet handled by the exporter',
    labelNames: ['tenant', 'exporter', 'topic'],
    registers: [registry],
    collect() {
      this.reset();
      for (const s of source())
        for (const t of s.topics) this.set({ tenant: s.tenant, exporter: s.exporter, topic: t.topic }, t.lag);
    },
  });
  new Gauge({
    name: 'edgeplane_exporter_status',
    help: 'Status of each exporter: 1 for its current status (starting, ready, retrying, paused, error, stopped)',
    labelNames: ['tenant', 'exporter', 'status'],
    registers: [registry],
    collect() {
      this.reset();
      for (const s of source()) this.set({ tenant: s.tenant, exporter: s.exporter, status: s.status }, 1);
    },
  });

  return (fn) => {
    source = fn;
  };
}

/** A control plane's fleet series (connections, change lag, last seen), one read per scrape. */
function fleetSeries(registry: Registry): Metrics['fleet'] {
  let fleetSource: (() => Promise<FleetSample>) | undefined;
  // One read of the fleet per scrape, shared by its three series.
  let fleetRead: { at: number; sample: Promise<FleetSample | undefined> } | undefined;
  const fleetSample = () => {
    const at = performance.now();
    if (!fleetRead || at - fleetRead.at > 100)
      fleetRead = { at, sample: fleetSource ? fleetSource().catch(() => undefined) : Promise.resolve(undefined) };
    return fleetRead.sample;
  };
  new Gauge({
    name: 'edgeplane_fleet_sites',
    help: 'Edge sites by connection state (control plane only)',
    labelNames: ['connection'],
    registers: [registry],
    async collect() {
      this.reset();
      const s = await fleetSample();
      for (const [connection, n] of Object.entries(s?.connections ?? {})) this.set({ connection }, n);
    },
  });
  new Gauge({
    name: 'edgeplane_fleet_site_change_lag',
    help: "Changes in an edge site's log not yet acknowledged by the site (control plane only)",
    labelNames: ['site'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const r of (await fleetSample())?.sites ?? []) this.set({ site: r.site }, r.lag);
    },
  });
  new Gauge({
    name: 'edgeplane_fleet_site_last_seen_seconds',
    help: 'Seconds since an edge site was last heard (control plane only; none for a site never heard)',
    labelNames: ['site'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const r of (await fleetSample())?.sites ?? [])
        if (r.lastSeenSeconds !== undefined) this.set({ site: r.site }, r.lastSeenSeconds);
    },
  });

  return (fn) => {
    fleetSource = fn;
  };
}

/** `handler` timed into `requestSeconds` by route template, method and status class. */
function timedBy(
  requestSeconds: CellHistogram,
  route: string | ((c: Context<AppEnv>) => string),
  handler: Handler,
): Handler {
  // route → method → status class → cell, filled as they occur (a handful per route).
  const byRoute = new Map<string, Map<string, Array<Cell | undefined>>>();
  const record = (c: Context<AppEnv>, status: number, started: number) => {
    const r = typeof route === 'string' ? route : route(c);
    const m = methods.has(c.req.method) ? c.req.method : 'other';
    let byMethod = byRoute.get(r);
    if (!byMethod) byRoute.set(r, (byMethod = new Map()));
    let cells = byMethod.get(m);
    if (!cells) byMethod.set(m, (cells = []));
    const k = Math.min(Math.max(Math.floor(status / 100), 1), 5) - 1;
    const cell = (cells[k] ??= requestSeconds.cell({ route: r, method: m, code: classes[k] as string }));
    requestSeconds.observe(cell, (performance.now() - started) / 1000);
  };
  return (c) => {
    const started = performance.now();
    let res: Response | Promise<Response>;
    try {
      res = handler(c);
    } catch (err) {
      record(c, statusOfError(err), started);
      throw err;
    }
    if (res instanceof Response) {
      record(c, res.status, started);
      return res;
    }
    return res.then(
      (r) => {
        record(c, r.status, started);
        return r;
      },
      (err: unknown) => {
        record(c, statusOfError(err), started);
        throw err;
      },
    );
  };
}

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** GET /metrics: no token, unless `token` (METRICS_TOKEN) is set: then `Authorization: Bearer <it>`. */
export function metricsRoutes(metrics: Metrics, token: string | undefined): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  on(app, routes.metrics, async (c) => {
    if (token !== undefined) {
      const h = c.req.header('authorization') ?? '';
      const given = bearerToken(h);
      if (given === undefined || !sameSecret(given, token))
        throw new ApiError(
          'unauthorized',
          'Authentication required: send Authorization: Bearer <METRICS_TOKEN> to read /metrics',
          { code: h ? 'bad-metrics-token' : 'missing-token' },
          { headers: { 'WWW-Authenticate': 'Bearer realm="metrics"' } },
        );
    }
    const text = await metrics.registry.metrics();
    return new Response(text, {
      status: 200,
      headers: { 'content-type': metrics.registry.contentType, 'cache-control': 'no-store' },
    });
  });
  allowRoutes(app);
  return app;
}
