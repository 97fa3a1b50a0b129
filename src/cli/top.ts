/**
 * `ctl top`: a live table of the webhook exporters (like `vector top`), redrawn every second
 * from `GET /v1/state/volga/webhooks`: status, delivered, delivered/s (from the difference of
 * the last two samples), lag (summed over topics), in flight, failed attempts, dropped, the
 * retry state (`next retry in N s, failing since …`) and the last error (with its time when it
 * is history: the exporter is not retrying). q or Ctrl-C quits. State fields are read by name, tolerating absent ones.
 *
 * At a control plane an exporter placed on edge sites is the fleet's (its `sites` rows): under
 * its line, one line per site (status, delivered, delivered/s, lag, failed, dropped, last error
 * with its time), and below the table the staged rollouts of exporters (state, wave, sites
 * updated, reason) and the sites with their connection and the exporters they run.
 */
import { CliError, failure } from './client.js';
import type { Verb } from './verb.js';
import { table } from './output.js';
import { withQuery } from './paths.js';
import { webhook } from '../resources/webhook/index.js';
import { lastErrorWords, retryWords, rolloutWords, siteReportWords } from '../lib/exporter-words.js';
import { errorText } from '../lib/error-text.js';

type Row = Record<string, unknown>;
type Sample = { at: number; delivered: number };

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/** Lag summed over topics: `topic-lag: [{topic, lag}]`, or older `topics: [{name, lag}]`, or a number. */
export function lagOf(state: Row): number | undefined {
  const direct = num(state.lag);
  if (direct !== undefined) return direct;
  for (const field of ['topic-lag', 'topics']) {
    const list = state[field];
    if (Array.isArray(list)) {
      let sum = 0;
      let any = false;
      for (const t of list) {
        const l = t && typeof t === 'object' ? num((t as Row).lag) : undefined;
        if (l !== undefined) {
          sum += l;
          any = true;
        }
      }
      if (any || list.length === 0) return sum;
    }
  }
  return undefined;
}

export function frame(
  rows: Row[],
  previous: Map<string, Sample>,
  now: number,
  width: number,
): { text: string; samples: Map<string, Sample> } {
  const samples = new Map<string, Sample>();
  const rateOf = (key: string, delivered: number) => {
    samples.set(key, { at: now, delivered });
    const before = previous.get(key);
    return before && now > before.at
      ? ((Math.max(0, delivered - before.delivered) * 1000) / (now - before.at)).toFixed(1)
      : '-';
  };
  const lines: Row[] = [];
  for (const s of rows) {
    const name = String(s.name ?? '?');
    const delivered = num(s.delivered) ?? 0;
    lines.push({
      name,
      status: String(s.status ?? '?'),
      delivered,
      'delivered/s': rateOf(name, delivered),
      lag: lagOf(s) ?? '-',
      'in-flight': num(s['in-flight']) ?? '-',
      failed: num(s['failed-attempts']) ?? '-',
      dropped: num(s.dropped) ?? '-',
      retry: retryWords(s, now),
      'last error': lastErrorWords(s, now),
    });
    for (const site of sitesOf(s)) {
      const d = num(site.delivered) ?? 0;
      lines.push({
        name: `  @${String(site.site)}`,
        status: String(site.status ?? '?'),
        delivered: d,
        'delivered/s': rateOf(`${name}@${String(site.site)}`, d),
        lag: num(site.lag) ?? '-',
        'in-flight': '',
        failed: num(site['failed-attempts']) ?? '-',
        dropped: num(site.dropped) ?? '-',
        // A site cut off: its row is its last report, not what it does now.
        retry:
          site.connection === 'disconnected' || site.connection === 'never-connected' ? siteReportWords(site, now) : '',
        'last error': lastErrorWords(site, now),
      });
    }
  }
  const text = table(lines, [
    'name',
    'status',
    'delivered',
    'delivered/s',
    'lag',
    'in-flight',
    'failed',
    'dropped',
    'retry',
    'last error',
  ]);
  const clipped = text
    .split('\n')
    .map((l) => (l.length > width ? l.slice(0, Math.max(0, width - 1)) + '…' : l))
    .join('\n');
  return { text: rows.length === 0 ? '(no webhook exporters)\n' : clipped, samples };
}

/** An exporter's `sites` rows (the fleet's view at a control plane), or none. */
function sitesOf(state: Row): Row[] {
  const list = state.sites;
  return Array.isArray(list) ? list.filter((r): r is Row => !!r && typeof r === 'object' && 'site' in r) : [];
}

/**
 * The rollouts section (at a control plane): each exporter whose changes roll out in waves
 * (`rollout` in its state, with the progress the control plane adds), with its revision, state,
 * wave, sites updated and reason; empty when none has one.
 */
export function rolloutsFrame(exporters: Row[]): string {
  const rows: Row[] = [];
  for (const e of exporters) {
    const w = rolloutWords(e);
    if (w) rows.push({ rollout: String(e.name), ...w, reason: w.reason || '-' });
  }
  return rows.length === 0 ? '' : '\n' + table(rows, ['rollout', 'revision', 'state', 'wave', 'sites', 'reason']);
}

/**
 * The sites section: each edge site (`GET /v1/state/sites`, at a control plane) with its
 * connection and the exporters it runs (from the exporters' `sites` rows); empty elsewhere.
 */
export function sitesFrame(sites: Row[], exporters: Row[]): string {
  const running = new Map<string, string[]>();
  for (const e of exporters)
    for (const r of sitesOf(e)) {
      const list = running.get(String(r.site)) ?? [];
      list.push(`${String(e.name)} (${String(r.status)})`);
      running.set(String(r.site), list);
    }
  const rows = sites
    .filter((s) => typeof s.connection === 'string')
    .map((s) => ({
      site: String(s.name),
      connection: String(s.connection),
      'in-sync': s['in-sync'] === true ? 'yes' : 'no',
      exporters: (running.get(String(s.name)) ?? []).join(', ') || '-',
    }));
  return rows.length === 0 ? '' : '\n' + table(rows, ['site', 'connection', 'in-sync', 'exporters']);
}

export async function top(v: Verb): Promise<number> {
  const path = withQuery(`/v1/state/${webhook.pathOf()}`, { site: v.flags.site });
  const tty = process.stdout.isTTY === true;
  let previous = new Map<string, Sample>();
  let stop: (code: number) => void = () => {};
  const done = new Promise<number>((resolve) => (stop = resolve));
  const stdin = process.stdin;
  const onKey = (d: Buffer) => {
    const s = d.toString();
    if (s.includes('q') || s.includes('Q') || s.includes('\u0003')) stop(0);
  };
  if (stdin.isTTY) {
    stdin.setRawMode(true);
    stdin.resume();
    stdin.on('data', onKey);
  }
  const onSignal = () => stop(0);
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  if (tty) v.out('\x1b[?1049h\x1b[?25l');
  let failedWith: CliError | undefined;
  const draw = async () => {
    let body: string;
    try {
      const res = await v.client.request('GET', path);
      // A refusal (a login needed, no right, an unknown site) will not pass by redrawing:
      // top ends with it, as `ctl get` does. Busy or unavailable (429, 5xx) is redrawn.
      if (res.status >= 400 && res.status < 500 && res.status !== 429) {
        failedWith = await failure(res, 'top');
        return stop(1);
      }
      if (res.status !== 200) body = `${(await failure(res, 'top')).message}\n`;
      else {
        const rows = (await res.json()) as Row[];
        const f = frame(Array.isArray(rows) ? rows : [], previous, Date.now(), process.stdout.columns || 160);
        previous = f.samples;
        body = f.text;
        if (!v.flags.site) {
          // At a control plane: the staged rollouts, and the edge sites (a site answers its own
          // object without a connection and its exporters' state without rollout progress).
          body += rolloutsFrame(Array.isArray(rows) ? rows : []);
          const sites = await v.client.request('GET', '/v1/state/sites');
          if (sites.status === 200) {
            const list = (await sites.json()) as Row[];
            body += sitesFrame(Array.isArray(list) ? list : [], Array.isArray(rows) ? rows : []);
          } else await sites.arrayBuffer();
        }
      }
    } catch (e) {
      body = `${errorText(e)}\n`;
    }
    const title = `edgeplane top  ${v.client.url}${v.flags.site ? `  site ${v.flags.site}` : ''}  ${new Date().toISOString().slice(11, 19)}  (q to quit)\n\n`;
    v.out((tty ? '\x1b[H\x1b[2J' : '') + title + body + (tty ? '' : '\n'));
  };
  await draw();
  const timer = setInterval(() => void draw(), 1000);
  const code = await done;
  clearInterval(timer);
  process.off('SIGINT', onSignal);
  process.off('SIGTERM', onSignal);
  if (stdin.isTTY) {
    stdin.off('data', onKey);
    stdin.setRawMode(false);
    stdin.pause();
  }
  if (tty) v.out('\x1b[?25h\x1b[?1049l');
  if (failedWith) throw failedWith;
  return code;
}
