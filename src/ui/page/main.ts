/**
 * The status page (/ui/), in the browser: a login form (POST /v1/login; the token stays in
 * sessionStorage), then every 2 s the exporters' state (/v1/state/volga/webhooks), the sites
 * (/v1/state/sites), the exporters' staged rollouts (at a control plane) and a throughput plot
 * (uPlot) of the last 15 minutes, seeded from each exporter's server-side history
 * (/v1/state/volga/webhooks/<name>/history) and extended by the page's own samples. Every
 * request carries the token; a 401 shows the login form again. Built by esbuild
 * (src/ui/assets.ts); no framework.
 */
import uPlot from 'uplot';
import { lastErrorWords, retryWords, rolloutWords, siteReportWords } from '../../lib/exporter-words.js';
import { errorText } from '../../lib/error-text.js';
import { robustTop } from './plot-scale.js';

type State = Record<string, unknown>;
/** A sample of an exporter: its delivered counter and its lag (summed over its topics). */
type Sample = { time: number; delivered: number; lag?: number };
type ErrorLine = { time: number; exporter: string; error: string };

const REFRESH_MS = 2000;
const WINDOW_MS = 15 * 60_000;
const BUCKET_MS = 5000;

const $ = <T extends HTMLElement>(id: string): T => document.getElementById(id) as T;
let token = sessionStorage.getItem('edgeplane-token') ?? '';
let timer: number | undefined;
let plot: uPlot | undefined;
let plotNames = '';
const samples = new Map<string, Sample[]>();
const lastPoll = new Map<string, Sample>();
const errors = new Map<string, ErrorLine>();
const historyLoaded = new Set<string>();
/** What the plot's scale and burst legend read: set by each renderPlot. */
let currentTop = 1;
let currentBursts: Array<number | null> = [];

class Unauthorized extends Error {}

type WireError = { 'error-message'?: string; 'error-info'?: string };

/** An error reply as one line: the first error's message and its code (error-info). */
function errorLine(body: { errors?: WireError[] } | undefined, fallback: string): string {
  const e = body?.errors?.[0];
  if (!e?.['error-message']) return fallback;
  return e['error-info'] ? `${e['error-message']} [${e['error-info']}]` : e['error-message'];
}

async function api(path: string, init: RequestInit = {}): Promise<unknown> {
  const res = await fetch(path, {
    ...init,
    headers: { accept: 'application/json', authorization: `Bearer ${token}`, ...(init.headers ?? {}) },
  });
  if (res.status === 401) throw new Unauthorized();
  if (!res.ok) {
    const body = (await res.json().catch(() => undefined)) as { errors?: WireError[] } | undefined;
    throw new Error(`${path}: ${res.status} ${errorLine(body, res.statusText)}`);
  }
  return res.json();
}

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/** Lag summed over topics: `topic-lag: [{topic, lag}]`, or `topics: [{name, lag}]`. */
function lagOf(s: State): number | undefined {
  if (num(s.lag) !== undefined) return num(s.lag);
  for (const field of ['topic-lag', 'topics']) {
    const list = s[field];
    if (Array.isArray(list))
      return list.reduce((sum: number, t: unknown) => sum + (num((t as State | null)?.lag) ?? 0), 0);
  }
  return undefined;
}

function cell(text: string, cls = ''): HTMLTableCellElement {
  const td = document.createElement('td');
  td.textContent = text;
  if (cls) td.className = cls;
  return td;
}

function badge(text: string): HTMLTableCellElement {
  const td = document.createElement('td');
  const span = document.createElement('span');
  span.className = `status ${text}`;
  span.textContent = text;
  td.append(span);
  return td;
}

const show = (v: number | undefined, digits = 0) => (v === undefined ? '–' : v.toFixed(digits));

function addSample(name: string, s: Sample): void {
  const list = samples.get(name) ?? [];
  list.push(s);
  while (list.length > 0 && (list[0] as Sample).time < Date.now() - WINDOW_MS - BUCKET_MS) list.shift();
  samples.set(name, list);
}

async function loadHistory(name: string): Promise<void> {
  historyLoaded.add(name);
  const h = (await api(`/v1/state/volga/webhooks/${encodeURIComponent(name)}/history`)) as {
    samples?: Array<{ time: string; delivered: number; lag?: number }>;
    errors?: Array<{ time: string; error: string }>;
  };
  const server = (h.samples ?? []).map((p) => ({ time: Date.parse(p.time), delivered: p.delivered, lag: p.lag }));
  const mine = samples.get(name) ?? [];
  const first = mine[0]?.time ?? Infinity;
  samples.set(name, [...server.filter((p) => p.time < first - 1000), ...mine]);
  for (const e of h.errors ?? []) noteError(name, Date.parse(e.time), e.error);
}

function noteError(exporter: string, time: number, error: string): void {
  errors.set(`${exporter}|${time}|${error}`, { exporter, time, error });
}

function renderExporters(states: State[]): void {
  const body = $('exporters').querySelector('tbody') as HTMLTableSectionElement;
  const now = Date.now();
  const rows = states.map((s) => {
    const name = String(s.name ?? '?');
    const delivered = num(s.delivered) ?? 0;
    const before = lastPoll.get(name);
    const rate =
      before && now > before.time ? ((delivered - before.delivered) * 1000) / (now - before.time) : undefined;
    lastPoll.set(name, { time: now, delivered });
    addSample(name, { time: now, delivered, lag: lagOf(s) });
    if (typeof s['last-error'] === 'string') {
      const at = typeof s['last-error-time'] === 'string' ? Date.parse(s['last-error-time']) : now;
      noteError(name, at, s['last-error']);
    }
    const tr = document.createElement('tr');
    tr.dataset.exporter = name;
    tr.append(
      cell(name),
      badge(String(s.status ?? 'unknown')),
      cell(show(num(s.delivered)), 'num delivered'),
      cell(rate === undefined ? '–' : show(Math.max(0, rate), 1), 'num'),
      cell(show(lagOf(s)), 'num lag'),
      cell(show(num(s['in-flight'])), 'num'),
      cell(show(num(s['failed-attempts'])), 'num'),
      cell(show(num(s.dropped)), 'num'),
      cell(show(num(s.filtered)), 'num'),
      cell(show(num(s.ignored)), 'num'),
      cell(retryWords(s, now), 'retry-text'),
      cell(lastErrorWords(s, now), s.status === 'retrying' || s.status === 'error' ? 'error-text' : 'muted wrap'),
    );
    return [tr, ...siteRows(name, s, now)];
  });
  body.replaceChildren(...rows.flat());
  $('no-exporters').hidden = rows.length > 0;
}

/** At a control plane, an exporter placed on edge sites: one row per site from its `sites` list. */
function siteRows(exporter: string, s: State, now: number): HTMLTableRowElement[] {
  const list = Array.isArray(s.sites) ? (s.sites as State[]) : [];
  return list.map((site) => {
    const name = String(site.site ?? '?');
    const key = `${exporter}@${name}`;
    const delivered = num(site.delivered) ?? 0;
    const before = lastPoll.get(key);
    const rate =
      before && now > before.time ? ((delivered - before.delivered) * 1000) / (now - before.time) : undefined;
    lastPoll.set(key, { time: now, delivered });
    const tr = document.createElement('tr');
    tr.className = 'site-row';
    tr.dataset.exporter = exporter;
    tr.dataset.site = name;
    const failing = site.status === 'retrying' || site.status === 'error';
    tr.append(
      cell(`↳ ${name}`, 'site-name'),
      badge(String(site.status ?? 'unknown')),
      cell(show(delivered), 'num delivered'),
      cell(rate === undefined ? '–' : show(Math.max(0, rate), 1), 'num'),
      cell(show(num(site.lag)), 'num lag'),
      cell('', 'num'),
      cell(show(num(site['failed-attempts'])), 'num'),
      cell(show(num(site.dropped)), 'num'),
      cell(show(num(site.filtered)), 'num'),
      cell(show(num(site.ignored)), 'num'),
      // Under Retry: when the site reported, and whether it is cut off (the row is then its last report).
      cell(
        siteReportWords(site, now),
        site.connection === 'disconnected' || site.connection === 'never-connected' ? 'error-text' : 'muted',
      ),
      cell(siteErrorWords(site), failing ? 'error-text' : 'muted wrap'),
    );
    return tr;
  });
}

/** A site's last error with its time. */
function siteErrorWords(site: State): string {
  if (typeof site['last-error'] !== 'string') return '';
  const at = typeof site['last-error-time'] === 'string' ? Date.parse(site['last-error-time']) : NaN;
  return Number.isFinite(at) ? `${new Date(at).toLocaleTimeString()}: ${site['last-error']}` : site['last-error'];
}

/** Site name → the exporters it runs (with their status there), from the exporters' `sites` lists. */
let exportersBySite = new Map<string, string[]>();
function noteSites(states: State[]): void {
  exportersBySite = new Map();
  for (const s of states)
    for (const site of Array.isArray(s.sites) ? (s.sites as State[]) : []) {
      const list = exportersBySite.get(String(site.site)) ?? [];
      list.push(`${String(s.name)} (${String(site.status)})`);
      exportersBySite.set(String(site.site), list);
    }
}

function renderErrors(): void {
  const list = [...errors.values()].sort((a, b) => b.time - a.time).slice(0, 20);
  $('errors').replaceChildren(
    ...list.map((e) => {
      const li = document.createElement('li');
      const time = document.createElement('time');
      time.textContent = new Date(e.time).toLocaleTimeString();
      const who = document.createElement('strong');
      who.textContent = `${e.exporter}: `;
      li.append(time, who, document.createTextNode(e.error));
      return li;
    }),
  );
  $('no-errors').hidden = list.length > 0;
}

function renderSites(sites: State[] | undefined): void {
  const card = $('sites-card');
  if (!sites) {
    card.hidden = true;
    return;
  }
  card.hidden = false;
  const body = $('sites').querySelector('tbody') as HTMLTableSectionElement;
  body.replaceChildren(
    ...sites.map((s) => {
      const tr = document.createElement('tr');
      const connection = typeof s.connection === 'string' ? s.connection : undefined;
      tr.append(
        cell(String(s.name ?? '?')),
        cell(String(s.type ?? '')),
        connection ? badge(connection) : cell('not reported', 'muted'),
        cell(typeof s['last-seen'] === 'string' ? new Date(s['last-seen']).toLocaleString() : '–'),
        cell(typeof s['in-sync'] === 'boolean' ? (s['in-sync'] ? 'yes' : 'no') : '–'),
        cell((exportersBySite.get(String(s.name)) ?? []).join(', ') || '–', 'site-exporters'),
      );
      return tr;
    }),
  );
  $('no-sites').hidden = sites.length > 0;
}

/**
 * The staged rollouts (at a control plane: an exporter's state carries `rollout` with the
 * progress): revision, state, wave, sites updated, reason (lib/exporter-words.ts). The card is
 * hidden when no exporter has one.
 */
function renderRollouts(states: State[]): void {
  const rows: HTMLTableRowElement[] = [];
  for (const s of states) {
    const w = rolloutWords(s);
    if (!w) continue;
    const tr = document.createElement('tr');
    tr.dataset.exporter = String(s.name ?? '?');
    tr.append(
      cell(String(s.name ?? '?')),
      cell(w.revision, 'num'),
      badge(w.state),
      cell(w.wave),
      cell(w.sites),
      cell(w.reason || '–', 'reason'),
    );
    rows.push(tr);
  }
  ($('rollouts').querySelector('tbody') as HTMLTableSectionElement).replaceChildren(...rows);
  $('rollouts-card').hidden = rows.length === 0;
}

/** Per bucket index of `xs` (5 s buckets from `start`): the time's bucket. */
const bucketOf = (time: number, start: number): number => Math.ceil((time - start) / BUCKET_MS);

/** delivered/s of one exporter in 5 s buckets over the window (counter increase / 5 s). */
function rateSeries(list: Sample[], start: number, buckets: number): Array<number | null> {
  const ys: Array<number | null> = new Array<number | null>(buckets).fill(null);
  for (let i = 1; i < list.length; i++) {
    const a = list[i - 1] as Sample;
    const b = list[i] as Sample;
    if (b.time <= a.time || b.time < start) continue;
    const at = bucketOf(b.time, start);
    if (at < 0 || at >= ys.length) continue;
    ys[at] = (ys[at] ?? 0) + Math.max(0, b.delivered - a.delivered) / (BUCKET_MS / 1000);
  }
  // Between the first and the last sample, a bucket without deliveries is 0, not a gap.
  const first = list[0];
  const last = list[list.length - 1];
  if (first && last) {
    const from = Math.max(0, bucketOf(first.time, start));
    const to = Math.min(ys.length - 1, bucketOf(last.time, start));
    for (let i = from; i <= to; i++) ys[i] ??= 0;
  }
  return ys;
}

/** The lag summed over the exporters: per bucket, each exporter's last sample in it. */
function lagSeries(start: number, buckets: number): Array<number | null> {
  const ys: Array<number | null> = new Array<number | null>(buckets).fill(null);
  for (const list of samples.values()) {
    const mine: Array<number | null> = new Array<number | null>(buckets).fill(null);
    for (const p of list) {
      const at = bucketOf(p.time, start);
      if (p.lag !== undefined && at >= 0 && at < buckets) mine[at] = p.lag;
    }
    mine.forEach((v, i) => {
      if (v !== null) ys[i] = (ys[i] ?? 0) + v;
    });
  }
  return ys;
}

/** Writes each burst's real rate beside its marker at the top edge (the line leaves the scale there). */
function labelBursts(u: uPlot): void {
  const ctx = u.ctx;
  ctx.save();
  ctx.fillStyle = '#c62828';
  ctx.font = `${Math.round(12 * devicePixelRatio)}px system-ui, sans-serif`;
  ctx.textBaseline = 'middle';
  currentBursts.forEach((rate, i) => {
    const x = u.data[0][i];
    if (rate === null || x === undefined) return;
    const px = u.valToPos(x, 'x', true);
    const py = u.valToPos(currentTop * 1.04, 'y', true);
    ctx.fillText(`↑ ${rate.toFixed(0)}/s (burst)`, px + 9 * devicePixelRatio, py);
  });
  ctx.restore();
}

/**
 * The throughput plot: delivered/s per exporter (left axis, a robust scale: plot-scale.ts),
 * a burst above that scale marked at the top edge with its real rate, and the total lag as a
 * dashed line on its own axis (right).
 */
function renderPlot(): void {
  const names = [...samples.keys()].sort();
  const end = Math.ceil(Date.now() / BUCKET_MS) * BUCKET_MS;
  const start = end - WINDOW_MS;
  const xs: number[] = [];
  for (let t = start; t <= end; t += BUCKET_MS) xs.push(t / 1000);
  const series = names.map((name) => rateSeries(samples.get(name) ?? [], start, xs.length));
  const rates = series.flat().filter((v): v is number => v !== null);
  const top = Math.max(0, ...rates);
  const scale = robustTop(rates);
  // A bucket above the scale: the marker sits at the top edge, the legend shows the real rate.
  const burstRate = xs.map((_x, i) => {
    const m = Math.max(0, ...series.map((ys) => ys[i] ?? 0));
    return scale.clipped && m > scale.top ? m : null;
  });
  const bursts = burstRate.map((r) => (r === null ? null : scale.top * 1.04));
  const lag = lagSeries(start, xs.length);
  currentTop = scale.top;
  currentBursts = burstRate;
  const el = $('plot');
  el.dataset.maxRate = String(top);
  el.dataset.scaleTop = String(scale.top);
  el.dataset.bursts = String(burstRate.filter((r) => r !== null).length);
  el.dataset.lagMax = String(Math.max(0, ...lag.filter((v): v is number => v !== null)));
  const data = [xs, ...series, bursts, lag] as uPlot.AlignedData;
  const width = Math.max(300, el.clientWidth || 800);
  const colors = ['#2f5da8', '#1a7f37', '#b35900', '#8e24aa', '#00838f', '#6d4c41'];
  if (plot && plotNames === names.join('|')) {
    plot.setSize({ width, height: 260 });
    plot.setData(data);
    return;
  }
  plot?.destroy();
  plotNames = names.join('|');
  plot = new uPlot(
    {
      width,
      height: 260,
      scales: {
        x: { time: true },
        // The y range follows the robust top, not the burst (read at each setData).
        y: { range: () => [0, currentTop * 1.1] },
        lag: { range: (_u, _min, max) => [0, Math.max(10, max * 1.1)] },
      },
      hooks: { draw: [labelBursts] },
      axes: [
        {},
        { label: 'delivered/s', size: 60 },
        { label: 'lag (entries, dashed)', scale: 'lag', side: 1, size: 60, grid: { show: false } },
      ],
      series: [
        {},
        ...names.map((name, i) => ({
          label: name,
          stroke: colors[i % colors.length],
          fill: `${colors[i % colors.length]}1f`,
          width: 2,
          spanGaps: true,
          points: { show: true, size: 5 },
        })),
        {
          label: 'burst (off the scale)',
          stroke: '#c62828',
          width: 0,
          paths: () => null,
          points: { show: true, size: 11, width: 2, fill: '#ffffff' },
          value: (_u: uPlot, _v: number | null, _s: number, idx: number | null) => {
            const r = idx === null ? null : currentBursts[idx];
            return r === null || r === undefined ? '–' : `${r.toFixed(1)}/s`;
          },
        },
        { label: 'lag (all exporters)', scale: 'lag', stroke: '#555555', width: 1.5, dash: [6, 4], spanGaps: true },
      ],
    },
    data,
    el,
  );
}

async function refresh(): Promise<void> {
  try {
    const states = (await api('/v1/state/volga/webhooks')) as State[];
    renderExporters(states);
    renderRollouts(states);
    noteSites(states);

    const names = new Set(states.map((s) => String(s.name)));
    for (const name of samples.keys()) if (!names.has(name)) samples.delete(name);
    await Promise.all(
      [...names].filter((n) => !historyLoaded.has(n)).map((n) => loadHistory(n).catch(() => undefined)),
    );
    let sites: State[] | undefined;
    try {
      sites = (await api('/v1/state/sites')) as State[];
    } catch (err) {
      if (err instanceof Unauthorized) throw err;
      sites = undefined;
    }
    renderSites(sites);
    renderErrors();
    renderPlot();
    $('updated').textContent = `updated ${new Date().toLocaleTimeString()}`;
  } catch (err) {
    if (err instanceof Unauthorized) return showLogin('Your session ended: log in again.');
    $('updated').textContent = `cannot refresh: ${errorText(err)}`;
  }
}

function showLogin(message = ''): void {
  if (timer !== undefined) clearInterval(timer);
  timer = undefined;
  token = '';
  sessionStorage.removeItem('edgeplane-token');
  $('dashboard').hidden = true;
  $('logout').hidden = true;
  $('login').hidden = false;
  $('login-error').textContent = message;
}

function showDashboard(): void {
  $('login').hidden = true;
  $('dashboard').hidden = false;
  $('logout').hidden = false;
  void refresh();
  timer = window.setInterval(() => void refresh(), REFRESH_MS);
}

$('login').addEventListener('submit', (ev) => {
  ev.preventDefault();
  const form = new FormData(ev.target as HTMLFormElement);
  void (async () => {
    const res = await fetch('/v1/login', {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ username: form.get('username'), password: form.get('password') }),
    });
    const body = (await res.json().catch(() => ({}))) as {
      token?: string;
      errors?: WireError[];
    };
    if (res.ok && body.token) {
      token = body.token;
      sessionStorage.setItem('edgeplane-token', token);
      showDashboard();
    } else $('login-error').textContent = errorLine(body, `Login failed (${res.status})`);
  })().catch((err: unknown) => {
    // The server did not answer (stopped, network gone): say so instead of doing nothing.
    $('login-error').textContent = `cannot log in: ${errorText(err)}`;
  });
});
$('logout').addEventListener('click', () => showLogin());
$('server').textContent = location.host;
if (token) showDashboard();
else showLogin();
