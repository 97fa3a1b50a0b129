/** The words of a transaction (model/transaction.ts): its operations, changes and context. */
import type { JsonObject } from '../lib/json.js';
import type { Strongbox } from '../secrets/strongbox.js';
import type { Store } from '../store/store.js';
import type { Operation } from '../resources/policy/rules.js';
import type { TenantLookup } from './tenant-checks.js';

export type Op = 'create' | 'replace' | 'update' | 'delete' | 'remove';
export const ops: readonly Op[] = ['create', 'replace', 'update', 'delete', 'remove'];

export type Change = {
  /** Config path without /v1/config/, e.g. 'volga/webhooks/a'. */
  path: string;
  op: Op;
  /** Full object (create/replace) or plain patch (update). */
  value?: JsonObject;
  /** JSON Patch operations (update). */
  jsonPatch?: unknown;
  /** Tenant whose tree the change is in (x-tenant); default: the context's tenant. */
  tenant?: string;
  /** x-etag or If-Match: the object must exist with this ETag ('*': must exist). */
  ifMatch?: string;
  /** If-None-Match: '*' the object must not exist; an ETag: it must not have it. */
  ifNoneMatch?: string;
};

/** One caller's permissions: what its policies allow on an absolute path, in a tenant (model/permissions.ts asks them). */
export type Permissions = {
  allows(absolutePath: string, op: Operation, tenant?: string): boolean;
  /** Throws the ApiError (403) that refuses `op` on the path, naming what is missing; returns when allowed. */
  authorize(absolutePath: string, op: Operation, tenant?: string): void;
};

export type TxContext = {
  store: Store;
  strongbox: Strongbox;
  tenant: string;
  /**
   * The caller's permissions, asked per change before anything is read (model/permissions.ts
   * says which operation a change needs); absent: no policy applies (the config file at start).
   */
  permissions?: Permissions;
  /** The tenant tree the resources' `checkInTenant` checks against (model/tenant-checks.ts); absent: no such checks. */
  tenants?: TenantLookup;
  /** The root tenant, when known: resources compile with it at write time (resources/module.ts). */
  rootTenant?: string;
  /** Told the keys of a successful commit before the reply goes out (caches of this process). */
  committed?: (keys: string[]) => void;
};
