/**
 * Write-time checks against the tenant tree, by the resource's `checkInTenant` (a new
 * subtenant name must be free; a webhook may read only vaults its parent shares with it and
 * no reserved topics), with the tenant tree the transaction is given (auth/tenants.ts
 * implements it).
 */
import type { ApiError } from '../lib/errors.js';
import type { JsonObject } from '../lib/json.js';
import type { Resolved } from './resources.js';

/** The tenant tree as the write path asks it (auth/tenants.ts `TenantTree` is one). */
export type TenantLookup = {
  /** Throws an ApiError when `name` cannot be a new subtenant of `parent`. */
  checkNewTenant(parent: string, name: string): Promise<void>;
  /** The tenant whose vault `vault` `tenant` reads (itself, or `fromTenant` when it shares it); throws an ApiError when none. */
  vaultTenant(tenant: string, fromTenant: string | undefined, vault: string, where?: string): Promise<string>;
};

export async function tenantChecks(
  tree: TenantLookup,
  rootTenant: string,
  tenant: string,
  r: Resolved,
  before: JsonObject | undefined,
  after: JsonObject,
): Promise<ApiError[]> {
  if (!r.def.checkInTenant) return [];
  return await r.def.checkInTenant(before, after, r.name, {
    tenant,
    rootTenant,
    checkNewTenant: (name) => tree.checkNewTenant(tenant, name),
    checkVaultReadable: async (from, vault, path) => {
      await tree.vaultTenant(tenant, from, vault, path);
    },
  });
}
