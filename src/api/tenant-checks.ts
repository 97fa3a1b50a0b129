import { ApiError } from '../lib/errors.js';
import { isObject, type JsonObject } from '../lib/json.js';
import type { Resolved } from '../model/resources.js';
import { reservedTopicPrefix, topicAllowed } from '../bus/topics.js';
import type { AppDeps } from './deps.js';

/**
 * Write-time checks against the tenant tree: a new subtenant name must be free (no leftover
 * data, not an existing tenant), and a webhook may read only vaults its parent shares with it.
 */
export async function tenantChecks(
  deps: AppDeps,
  tenant: string,
  r: Resolved,
  before: JsonObject | undefined,
  after: JsonObject,
): Promise<ApiError[]> {
  const out: ApiError[] = [];
  const collect = async (fn: () => Promise<unknown>) => {
    try {
      await fn();
    } catch (err) {
      if (err instanceof ApiError) out.push(err);
      else throw err;
    }
  };
  if (r.def.id === 'tenant' && !before && r.name)
    await collect(() => deps.auth.tenants.checkNewTenant(tenant, r.name as string));
  if (r.def.id === 'webhook') {
    const named = [
      ...(Array.isArray(after.topics) ? after.topics : []),
      ...(typeof after.topic === 'string' ? [after.topic] : []),
    ];
    for (const topic of named) {
      if (typeof topic === 'string' && !topicAllowed(topic, tenant, deps.settings.tenant)) {
        out.push(
          new ApiError(
            'forbidden',
            `Cannot subscribe to ${topic}: ${reservedTopicPrefix} topics carry every tenant's events and are read by the root tenant only`,
            { code: 'reserved-topic', path: 'topics' },
          ),
        );
      }
    }
  }
  if (r.def.id === 'webhook' && Array.isArray(after.variables)) {
    for (const [i, v] of after.variables.entries()) {
      const src = isObject(v) ? v['value-from-vault-secret'] : undefined;
      if (!isObject(src) || typeof src.vault !== 'string') continue;
      const from = typeof src['from-tenant'] === 'string' ? src['from-tenant'] : undefined;
      const vault = src.vault;
      await collect(() =>
        deps.auth.tenants.vaultTenant(tenant, from, vault, `variables[${i}]/value-from-vault-secret`),
      );
    }
  }
  return out;
}
