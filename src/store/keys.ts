/**
 * Store keys of configuration objects: `<tenant>/<path>`, where path is the object's path
 * below /v1/config without a leading slash (e.g. `default/volga/webhooks/hook1`).
 * Tenant names never contain '/'. Runtime (non-config) data lives in the store's kv area
 * under the prefixes named here.
 */
export function configKey(tenant: string, path: string): string {
  return path ? `${tenant}/${path}` : tenant;
}

/** Splits a config key back into tenant and path. */
export function splitKey(key: string): { tenant: string; path: string } {
  const slash = key.indexOf('/');
  return slash < 0 ? { tenant: key, path: '' } : { tenant: key.slice(0, slash), path: key.slice(slash + 1) };
}

export const kvPrefix = {
  /** Runtime state of one webhook exporter: `state:webhook:<tenant>/<name>` → JSON. */
  webhookState: 'state:webhook:',
  /** Login tokens: `token:<sha256 hex of token>` → JSON. */
  token: 'token:',
  /** Failed-login counters: `throttle:<user>|<address>`. */
  throttle: 'throttle:',
} as const;

/** The kv key of one webhook exporter's runtime state at one site: each site keeps its own. */
export function webhookStateKey(tenant: string, name: string, site: string): string {
  return `${kvPrefix.webhookState}${tenant}/${name}/${site}`;
}

/** The parts of a `webhookStateKey` (tenant, exporter and site names have no '/'). */
export function parseWebhookStateKey(key: string): { tenant: string; name: string; site: string } | undefined {
  if (!key.startsWith(kvPrefix.webhookState)) return undefined;
  const [tenant, name, site, ...rest] = key.slice(kvPrefix.webhookState.length).split('/');
  return tenant && name && site && rest.length === 0 ? { tenant, name, site } : undefined;
}
