/**
 * The sites of the configuration by label, kept up to date from the keys each projector pass
 * reads as changed (projector.ts), so that a commit of one webhook exporter is projected onto
 * the sites its placement may select without evaluating its placement at every site of the
 * fleet. `candidates` is a superset (every site where the exporter may be placed): the
 * projector still evaluates the placement itself at each candidate (applicable.ts).
 */
import { isObject, type JsonObject } from '../../lib/json.js';
import { siteLabels } from '../../resources/placement.js';
import { site as siteResource } from '../../resources/site.js';

/** `<key>=<value>` with nothing else: one label equality (the words of query/labels.ts's lexer). */
const equality = /^\s*([^\s=!(){},'"]+)\s*=\s*([^\s=!(){},'"]+)\s*$/;
const keywords = new Set(['and', 'or', 'in', 'not']);

export type SiteLabelIndex = {
  /** Brings the index to `view`, of which only the keys in `changed` differ from the last update. */
  update(view: ReadonlyMap<string, JsonObject>, changed: Iterable<string>): void;
  /** The names of `tenant`'s site objects. */
  sitesOf(tenant: string): Iterable<string>;
  /**
   * A superset of the sites where an exporter of `tenant` with this `site-placement` is placed,
   * or undefined when only a look at every site tells (all-sites, application deployments, a
   * label expression other than one equality).
   */
  candidates(tenant: string, placement: unknown): ReadonlySet<string> | undefined;
};

export function createSiteLabelIndex(): SiteLabelIndex {
  /** tenant → "<label>=<value>" → site names. */
  const byLabel = new Map<string, Map<string, Set<string>>>();
  /** tenant → site names with an object. */
  const names = new Map<string, Set<string>>();
  /** site key → the "<label>=<value>" entries it was indexed under. */
  const entriesOf = new Map<string, string[]>();
  const none: ReadonlySet<string> = new Set();

  const remove = (key: string, tenant: string, name: string) => {
    const labels = byLabel.get(tenant);
    for (const e of entriesOf.get(key) ?? []) {
      const set = labels?.get(e);
      set?.delete(name);
      if (set?.size === 0) labels!.delete(e);
    }
    entriesOf.delete(key);
    names.get(tenant)?.delete(name);
  };
  const add = (key: string, tenant: string, name: string, obj: JsonObject) => {
    let labels = byLabel.get(tenant);
    if (!labels) byLabel.set(tenant, (labels = new Map()));
    const entries: string[] = [];
    for (const [k, values] of siteLabels(name, obj))
      for (const v of values) {
        const e = `${k}=${v}`;
        entries.push(e);
        let set = labels.get(e);
        if (!set) labels.set(e, (set = new Set()));
        set.add(name);
      }
    entriesOf.set(key, entries);
    let n = names.get(tenant);
    if (!n) names.set(tenant, (n = new Set()));
    n.add(name);
  };

  return {
    update(view, changed) {
      for (const key of changed) {
        const p = siteResource.parseKey(key);
        if (p?.name === undefined) continue;
        remove(key, p.tenant, p.name);
        const obj = view.get(key);
        if (obj) add(key, p.tenant, p.name, obj);
      }
    },
    sitesOf: (tenant) => names.get(tenant) ?? none,
    candidates(tenant, placement) {
      if (!isObject(placement)) return none; // invalid: placed nowhere
      if (Array.isArray(placement.sites) && !('all-sites' in placement))
        return new Set(placement.sites.filter((s): s is string => typeof s === 'string'));
      const expr = placement['match-site-labels'];
      if ('all-sites' in placement || 'sites' in placement || 'application-deployments' in placement) return undefined;
      if (typeof expr !== 'string') return undefined;
      const m = equality.exec(expr);
      if (!m || keywords.has(m[1]!)) return undefined;
      // system/name is a label of every site, with or without an object in this tenant.
      if (m[1] === 'system/name') return new Set([m[2]!]);
      return byLabel.get(tenant)?.get(`${m[1]}=${m[2]}`) ?? none;
    },
  };
}
