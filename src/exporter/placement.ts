/**
 * Whether an exporter runs at this site (`site-placement`): exactly one of
 * all-sites, sites, application-deployments (the sites those deployments select) and
 * match-site-labels. Label expressions are compiled once per text and cached, since the
 * supervisor re-evaluates placement at every relevant configuration change.
 */
import { isObject, type JsonObject } from '../lib/json.js';
import { compileLabelExpr, type LabelMatcher } from '../query/labels.js';
import { deploymentSelector, siteLabelRecord, siteLabels, type SiteContext } from './system-vars.js';
import type { Labels } from '../query/labels.js';
import { BoundedMap } from '../lib/bounded-cache.js';

const compiled = new BoundedMap<string, LabelMatcher | Error>(10_000);

function matcher(text: string): LabelMatcher | Error {
  let m = compiled.get(text);
  if (!m) {
    try {
      m = compileLabelExpr(text);
    } catch (err) {
      m = err instanceof Error ? err : new Error(String(err));
    }
    compiled.set(text, m);
  }
  return m;
}

/** Whether a deployment's site selector selects a site with these labels; a selector that does not compile selects none. */
export function selects(selector: string, labels: Labels): boolean {
  const m = matcher(selector);
  return !(m instanceof Error) && m.test(labels);
}

/** The names of the sites (objects of /v1/config/sites, in their order) an application deployment selects. */
export function selectedSites(deployment: JsonObject, sites: readonly JsonObject[]): string[] {
  const selector = deploymentSelector(deployment);
  if (selector === undefined) return [];
  return sites
    .map((s) => String(s.name))
    .filter((name, i) => selects(selector, siteLabelRecord(siteLabels(name, sites[i]))));
}

export type Placement = { placed: true } | { placed: false; reason: string } | { placed: 'invalid'; reason: string };

export function placeHere(sitePlacement: unknown, ctx: SiteContext): Placement {
  if (!isObject(sitePlacement)) return { placed: 'invalid', reason: 'site-placement is missing' };
  const p: JsonObject = sitePlacement;
  if ('all-sites' in p) {
    // Both `all-sites: true` and the nested form `all-sites: {all-sites: true}` mean all.
    const v = p['all-sites'];
    const all = v === true || (isObject(v) && v['all-sites'] === true);
    return all ? { placed: true } : { placed: false, reason: 'all-sites is false' };
  }
  if (Array.isArray(p.sites)) {
    return p.sites.includes(ctx.site)
      ? { placed: true }
      : { placed: false, reason: `site ${ctx.site} is not listed in site-placement/sites` };
  }
  if (Array.isArray(p['application-deployments'])) {
    for (const name of p['application-deployments']) {
      if (typeof name !== 'string') continue;
      const expr = ctx.deployments.get(name);
      if (expr !== undefined && selects(expr, ctx.labels)) return { placed: true };
    }
    return { placed: false, reason: `no listed application deployment selects site ${ctx.site}` };
  }
  if (typeof p['match-site-labels'] === 'string') {
    const m = matcher(p['match-site-labels']);
    if (m instanceof Error) return { placed: 'invalid', reason: `site-placement/match-site-labels: ${m.message}` };
    return m.test(ctx.labels)
      ? { placed: true }
      : { placed: false, reason: `site ${ctx.site} labels do not match site-placement/match-site-labels` };
  }
  return {
    placed: 'invalid',
    reason: 'site-placement names none of all-sites, sites, application-deployments, match-site-labels',
  };
}
