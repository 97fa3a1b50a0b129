/**
 * Placement, the configuration's words for where things run: a site's labels (its own, its
 * hosts', system/type and system/name), an application deployment's site selector and the
 * sites it selects, and whether an exporter runs at a site (`site-placement`): exactly one of
 * all-sites, sites, application-deployments (the sites those deployments select) and
 * match-site-labels. The exporter supervisor, the fleet's projector (what applies to a site)
 * and /v1/state (a deployment's selected sites) all ask it. Label expressions are compiled
 * once per text and cached, since the supervisor re-evaluates placement at every relevant
 * configuration change.
 */
import { isObject, type JsonObject } from '../lib/json.js';
import { compileLabelExpr, type LabelMatcher, type Labels } from '../query/labels.js';
import { BoundedMap } from '../lib/bounded-cache.js';

/** What placement knows of a site: its name, its labels, and its tenant's deployments' selectors. */
export type PlacementContext = {
  site: string;
  /** The site object's labels, its hosts' labels, system/name and system/type. */
  labels: Labels;
  /** Deployment name → its `placement.match-site-labels` text. */
  deployments: ReadonlyMap<string, string>;
};

function addLabel(into: Map<string, string[]>, key: string, value: unknown): void {
  if (typeof value !== 'string') return;
  const list = into.get(key) ?? [];
  if (!list.includes(value)) list.push(value);
  into.set(key, list);
}

/** Site labels: when no site object exists for SITE, only system/name. */
export function siteLabels(site: string, obj: JsonObject | undefined): Map<string, string[]> {
  const labels = new Map<string, string[]>();
  if (obj) {
    if (isObject(obj.labels)) for (const [k, v] of Object.entries(obj.labels)) addLabel(labels, k, v);
    if (Array.isArray(obj.hosts)) {
      for (const h of obj.hosts)
        if (isObject(h) && isObject(h.labels)) for (const [k, v] of Object.entries(h.labels)) addLabel(labels, k, v);
    }
    addLabel(labels, 'system/type', obj.type);
  }
  labels.set('system/name', [site]);
  return labels;
}

/** An application deployment's site selector (`placement.match-site-labels`), if it has one. */
export function deploymentSelector(deployment: JsonObject): string | undefined {
  const placement = deployment.placement;
  return isObject(placement) && typeof placement['match-site-labels'] === 'string'
    ? placement['match-site-labels']
    : undefined;
}

/** The site's labels as a label expression reads them (one value as a string, several as a list). */
export function siteLabelRecord(labelMap: ReadonlyMap<string, string[]>): Labels {
  const labels: Record<string, string | string[]> = {};
  for (const [k, v] of labelMap) labels[k] = v.length === 1 ? v[0]! : v;
  return labels;
}

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

/** Why a placement holds or not, without its words (placement's decision, no string made). */
type Verdict =
  'placed' | 'all-false' | 'not-listed' | 'no-deployment' | 'no-match' | 'missing' | 'bad-expr' | 'no-kind';

function verdictOf(sitePlacement: unknown, ctx: PlacementContext): Verdict {
  if (!isObject(sitePlacement)) return 'missing';
  const p: JsonObject = sitePlacement;
  if ('all-sites' in p) {
    // Both `all-sites: true` and the nested form `all-sites: {all-sites: true}` mean all.
    const v = p['all-sites'];
    return v === true || (isObject(v) && v['all-sites'] === true) ? 'placed' : 'all-false';
  }
  if (Array.isArray(p.sites)) return p.sites.includes(ctx.site) ? 'placed' : 'not-listed';
  if (Array.isArray(p['application-deployments'])) {
    for (const name of p['application-deployments']) {
      if (typeof name !== 'string') continue;
      const expr = ctx.deployments.get(name);
      if (expr !== undefined && selects(expr, ctx.labels)) return 'placed';
    }
    return 'no-deployment';
  }
  if (typeof p['match-site-labels'] === 'string') {
    const m = matcher(p['match-site-labels']);
    if (m instanceof Error) return 'bad-expr';
    return m.test(ctx.labels) ? 'placed' : 'no-match';
  }
  return 'no-kind';
}

/**
 * Whether `sitePlacement` places an object at the site of `ctx` (placeHere's `placed === true`,
 * without the reason: the fleet's projector asks this of every exporter for each site it
 * projects, and the reasons' strings were most of what it made).
 */
export function isPlacedHere(sitePlacement: unknown, ctx: PlacementContext): boolean {
  return verdictOf(sitePlacement, ctx) === 'placed';
}

export function placeHere(sitePlacement: unknown, ctx: PlacementContext): Placement {
  const verdict = verdictOf(sitePlacement, ctx);
  switch (verdict) {
    case 'placed':
      return { placed: true };
    case 'all-false':
      return { placed: false, reason: 'all-sites is false' };
    case 'not-listed':
      return { placed: false, reason: `site ${ctx.site} is not listed in site-placement/sites` };
    case 'no-deployment':
      return { placed: false, reason: `no listed application deployment selects site ${ctx.site}` };
    case 'no-match':
      return { placed: false, reason: `site ${ctx.site} labels do not match site-placement/match-site-labels` };
    case 'missing':
      return { placed: 'invalid', reason: 'site-placement is missing' };
    case 'bad-expr': {
      const m = matcher(String((sitePlacement as JsonObject)['match-site-labels']));
      return { placed: 'invalid', reason: `site-placement/match-site-labels: ${m instanceof Error ? m.message : ''}` };
    }
    case 'no-kind':
      return {
        placed: 'invalid',
        reason: 'site-placement names none of all-sites, sites, application-deployments, match-site-labels',
      };
  }
}
