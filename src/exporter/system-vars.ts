/**
 * What a tenant's exporters see of the system at this site: the SYS_* variables and the
 * site labels used by placement (resources/placement.ts). Loaded from the store when the supervisor reconciles (a
 * change to sites, deployments or system/ triggers one), never per message.
 */
import { isObject } from '../lib/json.js';
import { deploymentSelector, siteLabelRecord, siteLabels, type PlacementContext } from '../resources/placement.js';
import type { Store } from '../store/store.js';
import { deployment } from '../resources/deployment.js';
import { dnsZone } from '../resources/dns-zone.js';
import { settings } from '../resources/settings.js';
import { site as siteResource } from '../resources/site.js';

/** Where `tenant`'s exporters run (placement) and what they see (SYS_* variables). */
export type SiteContext = PlacementContext & {
  tenant: string;
  /** SYS_* variables by full name, e.g. `SYS_DNS_ZONES[default]`, `SYS_SITE_LABELS[zone]`. */
  vars: ReadonlyMap<string, string>;
};

export async function loadSiteContext(
  store: Store,
  tenant: string,
  site: string,
  globalDomain: string,
): Promise<SiteContext> {
  const [siteEntry, settingsEntry, zones, deployments] = await Promise.all([
    store.get(siteResource.keyOf(tenant, site)),
    store.get(settings.keyOf(tenant)),
    store.list(dnsZone.keyOf(tenant)),
    store.list(deployment.keyOf(tenant)),
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
