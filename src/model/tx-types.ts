/** The words of a transaction (model/transaction.ts): its operations, changes and context. */
import type { ApiError } from '../lib/errors.js';
import type { JsonObject } from '../lib/json.js';
import type { Strongbox } from '../secrets/strongbox.js';
import type { Store } from '../store/store.js';
import type { Resolved } from './resources.js';

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

export type TxContext = {
  store: Store;
  strongbox: Strongbox;
  tenant: string;
  /** Called per change before anything is read (policies); throws ApiError to refuse. */
  authorize?: (change: Change, resolved: Resolved) => void;
  /** Checks that need the store or the tenant tree (new tenants, shared vaults); problems, not throws. */
  checkAsync?: (
    resolved: Resolved,
    before: JsonObject | undefined,
    after: JsonObject,
    tenant: string,
  ) => Promise<ApiError[]>;
  /** The root tenant, when known: resources compile with it at write time (resources/module.ts). */
  rootTenant?: string;
  /**
   * Who makes the change: the commit is then a revision of the configuration history, with
   * this user, the context's tenant and each object's stored form before and after.
   */
  actor?: string;
  /** Told the keys of a successful commit before the reply goes out (caches of this process). */
  committed?: (keys: string[]) => void;
};
