import type { ApiError } from '../lib/errors.js';
import type { JsonObject } from '../lib/json.js';
import type { Resolved } from '../model/resources.js';
import type { AppDeps } from './deps.js';

/**
 * Write-time checks against the tenant tree, by the resource's `checkInTenant` (a new
 * subtenant name must be free; a webhook may read only vaults its parent shares with it and
 * no reserved topics), with the tenant tree of auth/tenants.ts.
 */
export async function tenantChecks(
  deps: AppDeps,
  tenant: string,
  r: Resolved,
  before: JsonObject | undefined,
  after: JsonObject,
): Promise<ApiError[]> {
  if (!r.def.checkInTenant) return [];
  return await r.def.checkInTenant(before, after, r.name, {
    tenant,
    rootTenant: deps.settings.tenant,
    checkNewTenant: (name) => deps.auth.tenants.checkNewTenant(tenant, name),
    checkVaultReadable: async (from, vault, path) => {
      await deps.auth.tenants.vaultTenant(tenant, from, vault, path);
    },
  });
}
