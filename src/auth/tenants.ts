/**
 * The tenant tree. A subtenant is a configuration object of its parent at
 * `/v1/config/system/tenants/<name>` (store key `<parent>/system/tenants/<name>`):
 * `{name, shared-vaults?: [vault...]}`. The tree is walked from the root tenant, so a tenant
 * only exists if a chain of parents leads to the root; a name claimed twice belongs to the
 * claim nearest the root (checkNewTenant keeps that from happening through the API).
 * The walk is cached and dropped when any tenant object changes (store.onChange), and after
 * authCacheMaxAgeMs in case a notification was lost.
 */
import { ApiError } from '../lib/errors.js';
import { configKey } from '../store/keys.js';
import type { Store } from '../store/store.js';
import { authCacheMaxAgeMs } from './cache.js';
import { tenant as tenantResource } from '../resources/tenant.js';

export const tenantsPath = tenantResource.pathOf();

type Node = { parent: string | undefined; sharedVaults: readonly string[]; children: string[] };

export type TenantTree = {
  readonly root: string;
  exists(tenant: string): Promise<boolean>;
  parentOf(tenant: string): Promise<string | undefined>;
  /** Every tenant below `tenant` (children, their children, ...), not `tenant` itself. */
  descendants(tenant: string): Promise<string[]>;
  /**
   * The tenant whose vault a `value-from-vault-secret` of an object of `tenant` reads:
   * `tenant` itself when `fromTenant` is absent or names it, else the direct parent when that
   * parent shares `vault` with `tenant`. Anything else is 403 forbidden naming `where`.
   */
  vaultTenant(tenant: string, fromTenant: string | undefined, vault: string, where?: string): Promise<string>;
  /** 409 when `name` cannot become a new subtenant of `parent` (taken, root, or has data). */
  checkNewTenant(parent: string, name: string): Promise<void>;
  /** Drops the cached tree (called on changes of tenant objects). */
  invalidate(): void;
};

function stringList(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

export function createTenantTree(store: Store, root: string, now: () => number = Date.now): TenantTree {
  let cached: Promise<Map<string, Node>> | undefined;
  let cachedUntil = 0;
  let generation = 0;

  async function walk(): Promise<Map<string, Node>> {
    const nodes = new Map<string, Node>([[root, { parent: undefined, sharedVaults: [], children: [] }]]);
    const queue = [root];
    for (let t = queue.shift(); t !== undefined; t = queue.shift()) {
      const prefix = configKey(t, tenantsPath) + '/';
      for (const entry of await store.list(configKey(t, tenantsPath))) {
        const name = entry.key.slice(prefix.length);
        if (!entry.key.startsWith(prefix) || name === '' || name.includes('/') || nodes.has(name)) continue;
        nodes.set(name, { parent: t, sharedVaults: stringList(entry.value['shared-vaults']), children: [] });
        nodes.get(t)?.children.push(name);
        queue.push(name);
      }
    }
    return nodes;
  }

  function tree(): Promise<Map<string, Node>> {
    if (cached && cachedUntil > now()) return cached;
    const gen = generation;
    const p = walk();
    cached = p;
    cachedUntil = now() + authCacheMaxAgeMs;
    // A change during the walk may not be in it: keep the result for this caller only.
    p.then(
      () => {
        if (gen !== generation && cached === p) cached = undefined;
      },
      () => {
        if (cached === p) cached = undefined;
      },
    );
    return p;
  }

  return {
    root,
    async exists(tenant) {
      return (await tree()).has(tenant);
    },
    async parentOf(tenant) {
      return (await tree()).get(tenant)?.parent;
    },
    async descendants(tenant) {
      const nodes = await tree();
      const out: string[] = [];
      const stack = [...(nodes.get(tenant)?.children ?? [])];
      for (let t = stack.pop(); t !== undefined; t = stack.pop()) {
        out.push(t);
        stack.push(...(nodes.get(t)?.children ?? []));
      }
      return out.sort();
    },
    async vaultTenant(tenant, fromTenant, vault, where = '/value-from-vault-secret/from-tenant') {
      if (fromTenant === undefined || fromTenant === '' || fromTenant === tenant) return tenant;
      const node = (await tree()).get(tenant);
      if (node && node.parent === fromTenant && node.sharedVaults.includes(vault)) return fromTenant;
      throw new ApiError(
        'forbidden',
        `Cannot read vault ${JSON.stringify(vault)} of tenant ${JSON.stringify(fromTenant)}: only a vault the parent tenant lists in shared-vaults of this tenant can be read`,
        {
          code: 'vault-not-shared',
          path: where,
        },
      );
    },
    async checkNewTenant(parent, name) {
      const nodes = await tree();
      const node = nodes.get(name);
      const taken = name === root || (node !== undefined && node.parent !== parent);
      const left = node === undefined ? (await store.list(name)).length : 0;
      if (taken || left > 0) {
        // Objects left by a tenant of that name deleted while it still held them (before deletes
        // of such tenants were refused): a new tenant must not inherit them, nor learn their names.
        const why = taken
          ? 'the name is already used by another tenant'
          : `the store still holds ${left} object${left === 1 ? '' : 's'} of an earlier tenant of that name`;
        throw new ApiError('exists', `Cannot create tenant ${JSON.stringify(name)}: ${why}; choose another name`, {
          code: 'tenant-exists',
          path: `/v1/config/${tenantsPath}/${name}`,
        });
      }
    },
    invalidate() {
      generation++;
      cached = undefined;
    },
  };
}
