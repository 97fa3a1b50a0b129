/**
 * What applies to one edge site: the configuration objects the control plane sends it. A pure
 * function of the control plane's whole configuration (store key → object) and a site name,
 * so the projector (projector.ts) can compute every site's set from one consistent read and
 * tests can table it.
 *
 * A site receives: its own site object, `system/settings` and `system/dns-zones` (root tenant
 * and every tenant owning an exporter placed there), the webhook exporters placed on it
 * (resources/placement.ts, evaluated exactly as the site's own supervisor will: labels of the
 * owning tenant's site object, that tenant's deployments), the application deployments that
 * select the site for an `application-deployments` placement and their applications, the
 * vaults and secrets those exporters' `value-from-vault-secret` variables name, and the users
 * and policies of the root tenant and of the tenants owning those exporters (so logins work
 * while the site is cut off), with the tenant objects that chain those tenants to the root.
 * Nothing else.
 */
import { isObject, type JsonObject } from '../../lib/json.js';
import { application } from '../../resources/application.js';
import { deployment } from '../../resources/deployment.js';
import { dnsZone } from '../../resources/dns-zone.js';
import { policy } from '../../resources/policy/index.js';
import { secret } from '../../resources/secret.js';
import { settings } from '../../resources/settings.js';
import { site as siteResource } from '../../resources/site.js';
import { tenant as tenantResource } from '../../resources/tenant.js';
import { user } from '../../resources/user.js';
import { vault } from '../../resources/vault.js';
import { webhook } from '../../resources/webhook/index.js';
import type { Labels } from '../../query/labels.js';
import {
  deploymentSelector,
  isPlacedHere,
  selects,
  siteLabelRecord,
  siteLabels,
  type PlacementContext,
} from '../../resources/placement.js';

export type ConfigView = ReadonlyMap<string, JsonObject>;

/**
 * The parts of a view that every site's set is built from, found in one scan, so computing
 * the sets of a thousand sites does not scan the whole configuration a thousand times.
 */
export type ViewIndex = {
  /** Webhook exporters in view order: key, owning tenant. */
  webhooks: Array<{ key: string; tenant: string; cfg: JsonObject }>;
  /** Per tenant: deployment name → its match-site-labels expression. */
  deployments: Map<string, Map<string, string>>;
  /** Per tenant: the objects below system/dns-zones, system/users and system/policies, in view order. */
  basics: Map<string, Array<[string, JsonObject]>>;
  /** Tenant → the tenant that keeps its tenant object (first in view order). */
  parents: Map<string, string>;
};

/** The resources every tenant concerned sends whole, in this order. */
const basicResources = [dnsZone, user, policy];

export function indexView(view: ConfigView): ViewIndex {
  const index: ViewIndex = { webhooks: [], deployments: new Map(), basics: new Map(), parents: new Map() };
  const folders = new Map<string, Map<string, Array<[string, JsonObject]>>>(); // tenant → folder → objects
  for (const [key, value] of view) {
    const w = webhook.parseKey(key);
    if (w) {
      index.webhooks.push({ key, tenant: w.tenant, cfg: value });
      continue;
    }
    const d = deployment.parseKey(key);
    if (d) {
      const selector = deploymentSelector(value);
      if (selector !== undefined) {
        let byName = index.deployments.get(d.tenant);
        if (!byName) index.deployments.set(d.tenant, (byName = new Map()));
        byName.set(d.name!, selector);
      }
      continue;
    }
    const t = tenantResource.parseKey(key);
    if (t && !index.parents.has(t.name!)) index.parents.set(t.name!, t.tenant);
    const basic = basicResources.find((r) => r.parseKey(key));
    if (basic === undefined) continue;
    const { tenant } = basic.parseKey(key)!;
    const folder = basic.id;
    let byFolder = folders.get(tenant);
    if (!byFolder) folders.set(tenant, (byFolder = new Map()));
    let list = byFolder.get(folder);
    if (!list) byFolder.set(folder, (list = []));
    list.push([key, value]);
  }
  // The order tenantBasics copied them in: dns-zones, users, policies.
  for (const [tenant, byFolder] of folders)
    index.basics.set(
      tenant,
      basicResources.flatMap((r) => byFolder.get(r.id) ?? []),
    );
  return index;
}

/**
 * The index of a view that differs from the previous one (indexed as `prev`) only in the keys
 * `changed`, without a scan: `prev` itself when only site objects changed (an index holds
 * none), with the new content of exporters changed in place; undefined when anything else
 * changed (or an exporter came or went), and the view must be indexed again.
 */
export function reindexView(prev: ViewIndex, view: ConfigView, changed: ReadonlySet<string>): ViewIndex | undefined {
  let moved = false;
  for (const key of changed) {
    if (siteResource.parseKey(key)) continue;
    if (!webhook.parseKey(key) || !view.has(key) || !prev.webhooks.some((w) => w.key === key)) return undefined;
    moved = true;
  }
  if (!moved) return prev;
  return { ...prev, webhooks: prev.webhooks.map((w) => (changed.has(w.key) ? { ...w, cfg: view.get(w.key)! } : w)) };
}

function copy(view: ConfigView, key: string, into: Map<string, JsonObject>): boolean {
  const v = view.get(key);
  if (v) into.set(key, v);
  return v !== undefined;
}

/**
 * Labels by site object. The projector's views share the objects that did not change between
 * passes (store/snapshot.ts), so a site's labels are worked out once per version of its object.
 */
const labelsOf = new WeakMap<JsonObject, Labels>();
/** Placement context of `tenant`'s exporters at `site`, from the view (as loadSiteContext reads the store). */
function contextOf(view: ConfigView, index: ViewIndex, tenant: string, site: string): PlacementContext {
  const obj = view.get(siteResource.keyOf(tenant, site));
  let labels = obj && labelsOf.get(obj);
  if (!labels) {
    labels = siteLabelRecord(siteLabels(site, obj));
    if (obj) labelsOf.set(obj, labels);
  }
  const deployments = index.deployments.get(tenant) ?? new Map<string, string>();
  return { site, labels, deployments };
}

/** The tenant objects from `tenant` up to the root (each kept by its parent). */
function tenantChain(
  view: ConfigView,
  parents: ViewIndex['parents'],
  root: string,
  tenant: string,
  into: Map<string, JsonObject>,
): void {
  let t = tenant;
  for (let depth = 0; t !== root && depth < 64; depth++) {
    const parent = parents.get(t);
    if (parent === undefined) return;
    copy(view, tenantResource.keyOf(parent, t), into);
    t = parent;
  }
}

function tenantBasics(view: ConfigView, index: ViewIndex, tenant: string, into: Map<string, JsonObject>): void {
  copy(view, settings.keyOf(tenant), into);
  for (const [k, v] of index.basics.get(tenant) ?? []) into.set(k, v);
}

/**
 * Where the webhook exporter at `key` is placed: a change of that exporter concerns the sites
 * where it is placed now and those that hold it from before, and no other.
 */
export function webhookPlacement(view: ConfigView, index: ViewIndex, key: string): (site: string) => boolean {
  const w = index.webhooks.find((x) => x.key === key);
  if (!w) return () => false;
  const placement = w.cfg['site-placement'];
  return (site) => isPlacedHere(placement, contextOf(view, index, w.tenant, site));
}

/** `index` is indexView(view); pass it when computing the sets of many sites from one view. */
export function applicableTo(
  view: ConfigView,
  site: string,
  root: string,
  index: ViewIndex = indexView(view),
): Map<string, JsonObject> {
  const out = new Map<string, JsonObject>();
  copy(view, siteResource.keyOf(root, site), out);
  tenantBasics(view, index, root, out);
  const contexts = new Map<string, PlacementContext>();
  const owners = new Set<string>();
  for (const { key, tenant, cfg } of index.webhooks) {
    let ctx = contexts.get(tenant);
    if (!ctx) contexts.set(tenant, (ctx = contextOf(view, index, tenant, site)));
    const placement = cfg['site-placement'];
    if (!isPlacedHere(placement, ctx)) continue;
    out.set(key, cfg);
    owners.add(tenant);
    copy(view, siteResource.keyOf(tenant, site), out);
    if (isObject(placement) && Array.isArray(placement['application-deployments'])) {
      for (const name of placement['application-deployments']) {
        if (typeof name !== 'string') continue;
        const expr = ctx.deployments.get(name);
        if (expr === undefined || !selects(expr, ctx.labels)) continue;
        const dKey = deployment.keyOf(tenant, name);
        copy(view, dKey, out);
        const app = view.get(dKey)?.['application-name'];
        if (typeof app === 'string') copy(view, application.keyOf(tenant, app), out);
      }
    }
    for (const v of Array.isArray(cfg.variables) ? cfg.variables : []) {
      const ref = isObject(v) ? v['value-from-vault-secret'] : undefined;
      if (!isObject(ref) || typeof ref.vault !== 'string' || typeof ref.secret !== 'string') continue;
      const vaultTenant = typeof ref['from-tenant'] === 'string' ? ref['from-tenant'] : tenant;
      if (copy(view, vault.keyOf(vaultTenant, ref.vault), out))
        copy(view, secret.keyOf(vaultTenant, ref.vault, ref.secret), out);
    }
  }
  for (const tenant of owners) {
    if (tenant === root) continue;
    tenantBasics(view, index, tenant, out);
    tenantChain(view, index.parents, root, tenant, out);
  }
  return out;
}
