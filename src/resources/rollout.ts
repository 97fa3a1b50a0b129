/**
 * A staged rollout (CONTRACT §11): any configuration object that reaches edge sites may carry
 * `rollout: {waves: [{match-site-labels: "<expr>"} | {percent: N}], wait, healthy-for,
 * on-failure: pause | rollback}`. Its schema is in schemas.ts (on every resource); the checks
 * a schema cannot express are here (run by model/checks.ts for every object): each wave's
 * label expression compiles, and percentages grow from wave to wave (a percentage is
 * cumulative: `percent: 50` is "half of the sites have it once this wave is through").
 * The control plane runs it (fleet/control/rollouts.ts).
 */
import { ApiError } from '../lib/errors.js';
import { durationMs, durationTooLong } from '../lib/duration.js';
import { isObject, type JsonObject } from '../lib/json.js';
import { compileLabelExpr } from '../query/labels.js';
import { attempt } from './problems.js';

export type RolloutWave = { labels: string } | { percent: number };

export type RolloutSpec = {
  waves: RolloutWave[];
  waitMs: number;
  healthyForMs: number;
  onFailure: 'pause' | 'rollback';
};

/** What `wait` and `healthy-for` are when the object does not say. */
export const rolloutDefaults = { wait: '0s', 'healthy-for': '30s', 'on-failure': 'pause' } as const;

/** The object's rollout as the control plane runs it, or undefined when it has none (or it does not hold). */
export function parseRollout(obj: JsonObject): RolloutSpec | undefined {
  const r = obj.rollout;
  if (!isObject(r) || !Array.isArray(r.waves)) return undefined;
  const waves: RolloutWave[] = [];
  for (const w of r.waves) {
    if (isObject(w) && typeof w['match-site-labels'] === 'string') waves.push({ labels: w['match-site-labels'] });
    else if (isObject(w) && typeof w.percent === 'number') waves.push({ percent: w.percent });
    else return undefined;
  }
  const ms = (v: unknown, dflt: string) => durationMs(typeof v === 'string' ? v : dflt) ?? 0;
  return {
    waves,
    waitMs: ms(r.wait, rolloutDefaults.wait),
    healthyForMs: ms(r['healthy-for'], rolloutDefaults['healthy-for']),
    onFailure: r['on-failure'] === 'rollback' ? 'rollback' : 'pause',
  };
}

/** The problems of `obj`'s rollout a schema cannot see: label expressions, percentages that do not grow. */
export function rolloutErrors(obj: JsonObject, xPath: string): ApiError[] {
  const r = obj.rollout;
  if (!isObject(r) || !Array.isArray(r.waves)) return [];
  const out: ApiError[] = [];
  let lastPercent = 0;
  r.waves.forEach((w, i) => {
    if (!isObject(w)) return;
    const expr = w['match-site-labels'];
    if (typeof expr === 'string')
      attempt(out, xPath, `rollout/waves[${i}]/match-site-labels`, () => compileLabelExpr(expr));
    const percent = w.percent;
    // Out of 1..100: the schema's error says so; no second one about the order.
    if (typeof percent !== 'number' || percent < 1 || percent > 100) return;
    if (percent <= lastPercent)
      out.push(
        new ApiError(
          'invalid-value',
          `Cannot use percent ${percent} in wave ${i + 1} after ${lastPercent} in an earlier wave: percentages are cumulative (the share of sites that have the change once the wave is through), so each must be larger than the one before (${xPath})`,
          { code: 'rollout-percent', path: `rollout/waves[${i}]/percent`, 'x-path': xPath },
        ),
      );
    lastPercent = Math.max(lastPercent, percent);
  });
  for (const field of ['wait', 'healthy-for'] as const) {
    const v = r[field];
    const long = typeof v === 'string' ? durationTooLong(v, `rollout/${field}`) : undefined;
    if (long) out.push(long.rewrap(`${long.message} (${xPath})`, { 'x-path': xPath }));
  }
  return out;
}
