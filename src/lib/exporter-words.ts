/**
 * How the status page and `ctl top` put an exporter's retry state, last error and staged
 * rollout into words, written once for both (no Node imports: the page's bundle includes it).
 * A retry shows as `next retry in 3 s, failing since 14:02:11 (40 s)`; a last error is current
 * only while the exporter is `retrying` or in `error`, otherwise it is shown with its time, as
 * history: `at 14:02:11 (5 min ago): …`.
 */

type State = Record<string, unknown>;

const timeOf = (v: unknown): number | undefined => {
  if (typeof v !== 'string') return undefined;
  const t = Date.parse(v);
  return Number.isNaN(t) ? undefined : t;
};

/** A duration in words: `40 s`, `5 min`, `2 h`, `3 d`. */
export function spanWords(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  if (s < 172_800) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86_400)} d`;
}

/** HH:MM:SS (UTC) of a time, as logs show it. */
export const clockWords = (t: number): string => new Date(t).toISOString().slice(11, 19);

/** `next retry in N s, failing since HH:MM:SS (span)`, either part alone, or '' when neither. */
export function retryWords(s: State, now: number): string {
  const parts: string[] = [];
  const next = timeOf(s['next-attempt-time']);
  if (next !== undefined) parts.push(`next retry in ${Math.max(0, Math.ceil((next - now) / 1000))} s`);
  const since = timeOf(s['failing-since']);
  if (since !== undefined) parts.push(`failing since ${clockWords(since)} (${spanWords(now - since)})`);
  return parts.join(', ');
}

/**
 * A fleet view's site row (`sites` of an exporter at a control plane): `disconnected, reported
 * HH:MM:SS (span ago)` while the site is cut off (the row is its last report, not live), else
 * `reported HH:MM:SS`, or `not reported`.
 */
export function siteReportWords(site: State, now: number): string {
  const at = timeOf(site['reported-at']);
  if (site.connection === 'never-connected') return 'never connected';
  if (site.connection === 'disconnected')
    return at === undefined
      ? 'disconnected, not reported'
      : `disconnected, reported ${clockWords(at)} (${spanWords(now - at)} ago)`;
  return at === undefined ? 'not reported' : `reported ${clockWords(at)}`;
}

/** The last error as the current problem (`retrying`, `error`), or as history with its time. */
export function lastErrorWords(s: State, now: number): string {
  const text = s['last-error'];
  if (typeof text !== 'string') return '';
  if (s.status === 'retrying' || s.status === 'error') return text;
  const at = timeOf(s['last-error-time']);
  return at === undefined ? `earlier: ${text}` : `at ${clockWords(at)} (${spanWords(now - at)} ago): ${text}`;
}

/** The row of an exporter's staged rollout (its state's `rollout`, with the progress a control plane adds). */
export type RolloutWords = { revision: string; state: string; wave: string; sites: string; reason: string };

/**
 * An exporter's staged rollout as words: revision, state, wave (from 1: the spec's waves may be
 * followed by one more, of the sites none selects, which the state does not count), `N of M`
 * sites updated, reason ('' when none); undefined without rollout progress (at a site, or no
 * `rollout`).
 */
export function rolloutWords(s: State): RolloutWords | undefined {
  const r = s.rollout;
  if (!r || typeof r !== 'object') return undefined;
  const p = r as State;
  if (typeof p.state !== 'string') return undefined;
  const n = (v: unknown) => (typeof v === 'number' ? String(v) : '?');
  return {
    revision: n(p.revision),
    state: p.state,
    wave: n(p.wave),
    sites: `${n(p['sites-updated'])} of ${n(p['sites-total'])}`,
    reason: typeof p.reason === 'string' ? p.reason : '',
  };
}
