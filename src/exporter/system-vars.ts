/**
 * What a tenant's exporters see of the system at this site: the SYS_* variables and the
 * site labels used by placement. Loaded from the store when the supervisor reconciles (a
 * change to sites, deployments or system/ triggers one), never per message.
 */
import { isObject, type JsonObject } from '../lib/json.js';
import { configKey } from '../store/keys.js';
import type { Labels } from '../query/labels.js';
import type { Store } from '../store/store.js';

export type SiteContext = {
  site: string;
  tenant: string;
  /** The site object's labels, its hosts' labels, system/name and system/type. */
  labels: Labels;
  /** SYS_* variables by full name, e.g. `SYS_DNS_ZONES[default]`, `SYS_SITE_LABELS[zone]`. */
  vars: ReadonlyMap<string, string>;
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

export async function loadSiteContext(
  store: Store,
  tenant: string,
  site: string,
  globalDomain: string,
): Promise<SiteContext> {
  const [siteEntry, settingsEntry, zones, deployments] = await Promise.all([
    store.get(configKey(tenant, `sites/${site}`)),
    store.get(configKey(tenant, 'system/settings')),
    store.list(configKey(tenant, 'system/dns-zones')),
    store.list(configKey(tenant, 'application-deployments')),
  ]);
  const labelMap = siteLabels(site, siteEntry?.value);
  const vars = new Map<string, string>([
    ['SYS_SITE', site],
    ['SYS_TENANT', tenant],
    ['SYS_GLOBAL_DOMAIN', globalDomain],
  ]);
  for (const [k, values] of labelMap) vars.set(`SYS_SITE_LABELS[${k}]`, values.join(','));
  for (const z of zones) {
    // Zones are objects {name, domain} below system/dns-zones; a list object is read too.
    const items = Array.isArray(z.value['dns-zones']) ? z.value['dns-zones'] : [z.value];
    for (const item of items)
      if (isObject(item) && typeof item.name === 'string' && typeof item.domain === 'string')
        vars.set(`SYS_DNS_ZONES[${item.name}]`, item.domain);
  }
  const defaultDomain = settingsEntry?.value['default-domain'];
  vars.set(
    'SYS_DNS_ZONES[default]',
    typeof defaultDomain === 'string' && defaultDomain ? defaultDomain : `${site}.local`,
  );

  const deps = new Map<string, string>();
  for (const d of deployments) {
    const name = d.value.name;
    const selector = deploymentSelector(d.value);
    if (typeof name === 'string' && selector !== undefined) deps.set(name, selector);
  }
  return { site, tenant, labels: siteLabelRecord(labelMap), vars, deployments: deps };
}
