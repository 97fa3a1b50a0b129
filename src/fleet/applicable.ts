/**
 * What applies to one edge site: the configuration objects the control plane sends it. A pure
 * function of the control plane's whole configuration (store key → object) and a site name,
 * so the projector (projector.ts) can compute every site's set from one consistent read and
 * tests can table it.
 *
 * A site receives: its own site object, `system/settings` and `system/dns-zones` (root tenant
 * and every tenant owning an exporter placed there), the webhook exporters placed on it
 * (exporter/placement.ts, evaluated exactly as the site's own supervisor will: labels of the
 * owning tenant's site object, that tenant's deployments), the application deployments that
 * select the site for an `application-deployments` placement and their applications, the
 * vaults and secrets those exporters' `value-from-vault-secret` variables name, and the users
 * and policies of the root tenant and of the tenants owning those exporters (so logins work
 * while the site is cut off), with the tenant objects that chain those tenants to the root.
 * Nothing else.
 */
import { isObject, type JsonObject } from '../lib/json.js';
import { configKey } from '../store/keys.js';
import { placeHere, selects } from '../exporter/placement.js';
import { deploymentSelector, siteLabelRecord, siteLabels, type SiteContext } from '../exporter/system-vars.js';

export type ConfigView = ReadonlyMap<string, JsonObject>;

const webhookKey = /^([^/]+)\/volga\/webhooks\/([^/]+)$/;
const deploymentKey = /^([^/]+)\/application-deployments\/([^/]+)$/;
const tenantKey = /^([^/]+)\/system\/tenants\/([^/]+)$/;

function below(view: ConfigView, prefix: string, into: Map<string, JsonObject>): void {
  const p = prefix + '/';
  for (const [k, v] of view) if (k.startsWith(p)) into.set(k, v);
}

function copy(view: ConfigView, key: string, into: Map<string, JsonObject>): boolean {
  const v = view.get(key);
  if (v) into.set(key, v);
  return v !== undefined;
}

/** Placement context of `tenant`'s exporters at `site`, from the view (as loadSiteContext reads the store). */
function contextOf(view: ConfigView, tenant: string, site: string): SiteContext {
  const labels = siteLabelRecord(siteLabels(site, view.get(configKey(tenant, `sites/${site}`))));
  const deployments = new Map<string, string>();
  for (const [k, d] of view) {
    const m = deploymentKey.exec(k);
    const selector = m && m[1] === tenant ? deploymentSelector(d) : undefined;
    if (selector !== undefined) deployments.set(m![2]!, selector);
  }
  return { site, tenant, labels, vars: new Map(), deployments };
}

/** The tenant objects from `tenant` up to the root (each kept by its parent). */
function tenantChain(view: ConfigView, root: string, tenant: string, into: Map<string, JsonObject>): void {
  const parents = new Map<string, string>();
  for (const k of view.keys()) {
    const m = tenantKey.exec(k);
    if (m && !parents.has(m[2]!)) parents.set(m[2]!, m[1]!);
  }
  let t = tenant;
  for (let depth = 0; t !== root && depth < 64; depth++) {
    const parent = parents.get(t);
    if (parent === undefined) return;
    copy(view, configKey(parent, `system/tenants/${t}`), into);
    t = parent;
  }
}

function tenantBasics(view: ConfigView, tenant: string, into: Map<string, JsonObject>): void {
  copy(view, configKey(tenant, 'system/settings'), into);
  below(view, configKey(tenant, 'system/dns-zones'), into);
  below(view, configKey(tenant, 'system/users'), into);
  below(view, configKey(tenant, 'system/policies'), into);
}

export function applicableTo(view: ConfigView, site: string, root: string): Map<string, JsonObject> {
  const out = new Map<string, JsonObject>();
  copy(view, configKey(root, `sites/${site}`), out);
  tenantBasics(view, root, out);
  const contexts = new Map<string, SiteContext>();
  const owners = new Set<string>();
  for (const [key, cfg] of view) {
    const m = webhookKey.exec(key);
    if (!m) continue;
    const tenant = m[1]!;
    let ctx = contexts.get(tenant);
    if (!ctx) contexts.set(tenant, (ctx = contextOf(view, tenant, site)));
    const placement = cfg['site-placement'];
    if (placeHere(placement, ctx).placed !== true) continue;
    out.set(key, cfg);
    owners.add(tenant);
    copy(view, configKey(tenant, `sites/${site}`), out);
    if (isObject(placement) && Array.isArray(placement['application-deployments'])) {
      for (const name of placement['application-deployments']) {
        if (typeof name !== 'string') continue;
        const expr = ctx.deployments.get(name);
        if (expr === undefined || !selects(expr, ctx.labels)) continue;
        const dKey = configKey(tenant, `application-deployments/${name}`);
        copy(view, dKey, out);
        const app = view.get(dKey)?.['application-name'];
        if (typeof app === 'string') copy(view, configKey(tenant, `applications/${app}`), out);
      }
    }
    for (const v of Array.isArray(cfg.variables) ? cfg.variables : []) {
      const ref = isObject(v) ? v['value-from-vault-secret'] : undefined;
      if (!isObject(ref) || typeof ref.vault !== 'string' || typeof ref.secret !== 'string') continue;
      const vaultTenant = typeof ref['from-tenant'] === 'string' ? ref['from-tenant'] : tenant;
      if (copy(view, configKey(vaultTenant, `strongbox/vaults/${ref.vault}`), out))
        copy(view, configKey(vaultTenant, `strongbox/vaults/${ref.vault}/secrets/${ref.secret}`), out);
    }
  }
  for (const tenant of owners) {
    if (tenant === root) continue;
    tenantBasics(view, tenant, out);
    tenantChain(view, root, tenant, out);
  }
  return out;
}
