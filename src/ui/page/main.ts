/**
 * The status page (/ui/), in the browser: a login form (POST /v1/login; the token stays in
 * sessionStorage), then every 2 s the exporters' state (/v1/state/volga/webhooks), the sites
 * (/v1/state/sites) and a throughput plot (uPlot) of the last 15 minutes, seeded from each
 * exporter's server-side history (/v1/state/volga/webhooks/<name>/history) and extended by
 * the page's own samples. Every request carries the token; a 401 shows the login form again.
 * Built by esbuild (src/ui/assets.ts); no framework.
 */
import uPlot from 'uplot';
import { lastErrorWords, retryWords } from '../../lib/exporter-words.js';
import { errorText } from '../../lib/error-text.js';

type State = Record<string, unknown>;
type Sample = { time: number; delivered: number };
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
    samples?: Array<{ time: string; delivered: number }>;
    errors?: Array<{ time: string; error: string }>;
  };
  const server = (h.samples ?? []).map((p) => ({ time: Date.parse(p.time), delivered: p.delivered }));
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
    addSample(name, { time: now, delivered });
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
      cell(lastErrorWords(s, now), s.status === 'retrying' || s.status === 'error' ? 'error-text' : 'muted'),
    );
    return tr;
  });
  body.replaceChildren(...rows);
  $('no-exporters').hidden = rows.length > 0;
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
      );
      return tr;
    }),
  );
  $('no-sites').hidden = sites.length > 0;
}

/** delivered/s per exporter in 5 s buckets over the last 15 minutes (counter increase / 5 s). */
function renderPlot(): void {
  const names = [...samples.keys()].sort();
  const end = Math.ceil(Date.now() / BUCKET_MS) * BUCKET_MS;
  const start = end - WINDOW_MS;
  const xs: number[] = [];
  for (let t = start; t <= end; t += BUCKET_MS) xs.push(t / 1000);
  let top = 0;
  const series = names.map((name) => {
    const ys: Array<number | null> = xs.map(() => null);
    const list = samples.get(name) ?? [];
    for (let i = 1; i < list.length; i++) {
      const a = list[i - 1] as Sample;
      const b = list[i] as Sample;
      if (b.time <= a.time || b.time < start) continue;
      const at = Math.ceil((b.time - start) / BUCKET_MS);
      if (at < 0 || at >= ys.length) continue;
      const rate = (ys[at] ?? 0) + Math.max(0, b.delivered - a.delivered) / (BUCKET_MS / 1000);
      ys[at] = rate;
      top = Math.max(top, rate);
    }
    // Between the first and the last sample, a bucket without deliveries is 0, not a gap.
    const first = list[0];
    const last = list[list.length - 1];
    if (first && last) {
      const from = Math.max(0, Math.ceil((first.time - start) / BUCKET_MS));
      const to = Math.min(ys.length - 1, Math.ceil((last.time - start) / BUCKET_MS));
      for (let i = from; i <= to; i++) ys[i] ??= 0;
    }
    return ys;
  });
  $('plot').dataset.maxRate = String(top);
  const data = [xs, ...series] as uPlot.AlignedData;
  const width = Math.max(300, $('plot').clientWidth || 800);
  const colors = ['#2f5da8', '#1a7f37', '#b35900', '#8e24aa', '#c62828', '#00838f'];
  if (!plot || plotNames !== names.join('|')) {
    plot?.destroy();
    plotNames = names.join('|');
    plot = new uPlot(
      {
        width,
        height: 240,
        scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(1, max * 1.1)] } },
        axes: [{}, { label: 'delivered/s', size: 60 }],
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
        ],
      },
      data,
      $('plot'),
    );
  } else {
    plot.setSize({ width, height: 240 });
    plot.setData(data);
  }
}

async function refresh(): Promise<void> {
  try {
    const states = (await api('/v1/state/volga/webhooks')) as State[];
    renderExporters(states);
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
