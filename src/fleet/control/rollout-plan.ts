/**
 * A staged rollout's plan and gate, pure (rollouts.ts keeps the record and asks these):
 *
 *   planWaves  which sites each wave takes. Sites are taken in name order, each by the first
 *              wave that selects it: `match-site-labels` the sites whose labels it matches;
 *              `percent: N` the first ceil(N% of all sites) in name order, less those taken
 *              by earlier waves (percentages are cumulative). Sites no wave selects form one
 *              more wave at the end; empty waves are dropped.
 *   gate       whether the current wave is through, waits, or failed: every site of the wave
 *              has applied the change and reported (since the wave started) the object's
 *              exporters `ready` (or not running there: paused, stopped), all of them for
 *              `healthy-for` without a break and `wait` after the wave started; a site
 *              reporting `error` or `retrying` since the wave started fails it.
 */
import type { RolloutSpec } from '../../resources/rollout.js';
import { selects } from '../../resources/placement.js';
import type { Labels } from '../../query/labels.js';

export type PlanSite = { name: string; labels: Labels };

export function planWaves(spec: RolloutSpec, sites: readonly PlanSite[]): string[][] {
  const sorted = [...sites].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const taken = new Set<string>();
  const waves: string[][] = [];
  for (const w of spec.waves) {
    const wave: string[] = [];
    if ('labels' in w) {
      for (const s of sorted) if (!taken.has(s.name) && selects(w.labels, s.labels)) wave.push(s.name);
    } else {
      const upTo = Math.ceil((Math.min(100, w.percent) * sorted.length) / 100);
      for (const s of sorted.slice(0, upTo)) if (!taken.has(s.name)) wave.push(s.name);
    }
    for (const s of wave) taken.add(s);
    waves.push(wave);
  }
  waves.push(sorted.filter((s) => !taken.has(s.name)).map((s) => s.name));
  return waves.filter((w) => w.length > 0);
}

/** What the control plane knows of one site of the current wave. */
export type WaveSite = {
  site: string;
  /** The site has applied every change of its log (the wave's among them). */
  applied: boolean;
  /** Its last report: when it arrived (ms) and the statuses of the object's exporters in it. */
  report?: { at: number; statuses: Array<{ name: string; status: string; error?: string }> };
};

export type GateInput = {
  spec: RolloutSpec;
  now: number;
  /** When the current wave's sites were given the change (ms). */
  waveStarted: number;
  /** Since when every site of the wave has been healthy without a break (ms), if it is. */
  healthySince?: number;
  sites: readonly WaveSite[];
};

export type GateResult =
  | { kind: 'advance' }
  | { kind: 'wait'; healthySince?: number; reason: string; applied: number }
  | { kind: 'fail'; site: string; reason: string };

const failing = new Set(['error', 'retrying']);
const neutral = new Set(['ready', 'paused', 'stopped']);

export function gate(g: GateInput): GateResult {
  const notApplied: string[] = [];
  const notReady: string[] = [];
  for (const s of g.sites) {
    if (!s.applied) {
      notApplied.push(s.site);
      continue;
    }
    // A report from before the wave started shows the previous content: it does not count.
    const fresh = s.report !== undefined && s.report.at >= g.waveStarted ? s.report : undefined;
    for (const e of fresh?.statuses ?? [])
      if (failing.has(e.status))
        return {
          kind: 'fail',
          site: s.site,
          reason: `site ${s.site} reports exporter ${e.name} ${e.status}${e.error ? `: ${e.error}` : ''}`,
        };
    if (!fresh || !fresh.statuses.every((e) => neutral.has(e.status))) notReady.push(s.site);
  }
  const applied = g.sites.length - notApplied.length;
  const list = (names: string[]) =>
    names.slice(0, 5).join(', ') + (names.length > 5 ? ` and ${names.length - 5} more` : '');
  if (notApplied.length > 0)
    return { kind: 'wait', reason: `waiting for ${list(notApplied)} to apply the change`, applied };
  if (notReady.length > 0) return { kind: 'wait', reason: `waiting for ${list(notReady)} to report ready`, applied };
  const since = g.healthySince ?? g.now;
  if (g.now - since >= g.spec.healthyForMs && g.now - g.waveStarted >= g.spec.waitMs) return { kind: 'advance' };
  return { kind: 'wait', healthySince: since, reason: 'healthy; waiting for healthy-for and wait to pass', applied };
}
