/**
 * What one configuration resource is and does, in one place: its table entry (path, schema,
 * list rules) and the optional hooks the write path (model/), the API (api/, ops/openapi.ts)
 * and the exporter call instead of switching on the resource's id. A resource without a
 * hook behaves the plain way: stored as written, shown as stored, no extra checks.
 */
import type { ApiError } from '../lib/errors.js';
import type { JsonObject } from '../lib/json.js';
import type { Strongbox } from '../secrets/strongbox.js';
import { pathsOf, type ResourcePaths } from './paths.js';
import type { Schema } from './schemas.js';

/** What a write-time check knows besides the object. */
export type WriteContext = {
  /** The tenant whose tree the object is in. */
  tenant: string;
  /** The root tenant, when the caller knows it (the API does): compilation needs it. */
  rootTenant: string | undefined;
  /** The store key of the object. */
  key: string;
};

/** Checks against the tenant tree, as the API gives them (auth/tenants.ts). */
export type TenantContext = {
  tenant: string;
  rootTenant: string;
  /** Throws an ApiError when `name` cannot be a new subtenant of `tenant`. */
  checkNewTenant(name: string): Promise<void>;
  /** Throws an ApiError when `tenant` may not read `vault` of `fromTenant` (itself when undefined). */
  checkVaultReadable(fromTenant: string | undefined, vault: string, path: string): Promise<void>;
};

/** One object as /v1/state shows it: its path, value, and which members are configuration. */
export type StateItem = { path: string; value: JsonObject; config: ReadonlySet<string> };

/** What a state read knows besides the object (api/state.ts gives it). */
export type StateContext = {
  tenant: string;
  /** The name of this site. */
  site: string;
  /** The configuration object at `path` of the read's tenant, undefined when absent. */
  getConfig(path: string): Promise<JsonObject | undefined>;
  /** The running state of exporter `name` of the tenant: live in this process, else as this site stored it. */
  exporterState(name: string): Promise<JsonObject | undefined>;
  /** At a control plane, the link of site `name` to it (root tenant only); else undefined. */
  siteLink(name: string): Promise<JsonObject | undefined>;
  /** The objects of the tenant's list at `path` (a configuration path, e.g. of the sites), in their order. */
  listConfig(path: string): Promise<JsonObject[]>;
};

/** What a resource module declares; `resource()` adds what derives from it (its paths and keys). */
export type ResourceSpec = {
  readonly id: string;
  /** Path segments of the list (or object); ':x' marks the key of an enclosing list. */
  readonly segments: readonly string[];
  readonly shape: 'list' | 'object';
  readonly schema: Schema;
  /** Array members replaced, not merged, by a plain patch (by member path 'a/b'). */
  readonly ordered: ReadonlySet<string>;
  /** Key member of the entries of a keyed list, by member path, when it is not `name`. */
  readonly listKeys?: Readonly<Record<string, string>>;
  /** Served only while the secret store is unsealed. */
  readonly needsUnsealed: boolean;
  /** Listed by whole-tree reads (GET /v1/config without match-path, GET /v1/state) even while the secret store is sealed. */
  readonly listedWhileSealed?: boolean;
  /** For a nested list: the resource that must hold the enclosing key (vault of a secret). */
  readonly parent?: string;

  /**
   * Write-time compilation: the object's runnable form, or undefined when it cannot be made
   * (`check` then names the problems). Made once per write; `check` gets it, and `keep`
   * hands it to the runtime under the ETag the commit gave the object.
   */
  compile?(obj: JsonObject, ctx: WriteContext): unknown;
  /** After a commit: the compiled form of the object stored under `key` with `etag`. */
  keep?(key: string, etag: string, compiled: unknown): void;
  /** Semantic checks a JSON Schema cannot express; `compiled` is what `compile` gave. */
  check?(obj: JsonObject, xPath: string, ctx: WriteContext, compiled: unknown): ApiError[];
  /** Checks against the tenant tree (subtenant names, shared vaults, reserved topics). */
  checkInTenant?(
    before: JsonObject | undefined,
    after: JsonObject,
    name: string | undefined,
    ctx: TenantContext,
  ): Promise<ApiError[]>;

  /**
   * A written object as the transaction compares it with the one it replaces: write-only
   * members that say what `before` already holds take its stored form (a user's password that
   * is the current one becomes the current hash), so an unchanged object writes nothing.
   */
  settle?(after: JsonObject, before: JsonObject | undefined): Promise<JsonObject>;
  /** Stored form → working (plaintext) form. */
  fromStored?(stored: JsonObject, ctx: { strongbox: Strongbox; key: string }): JsonObject;
  /** Working form → stored form (encrypt, hash). */
  toStored?(
    after: JsonObject,
    ctx: { strongbox: Strongbox; key: string; before: JsonObject | undefined },
  ): JsonObject | Promise<JsonObject>;
  /** What a configuration read shows. */
  redact?(value: JsonObject): JsonObject;
  /** The form a JSON Patch applies to (a secret's values are hidden so a `test` cannot probe them). */
  patchForm?(value: JsonObject): JsonObject;
  /** A written object with the placeholders `redact` shows replaced by `current`'s values. */
  unredact?(next: JsonObject, current: JsonObject | undefined): JsonObject;
  /** The object as a dry-run diff may compare it: secret values replaced by `hide(value)`. */
  masked?(obj: JsonObject, hide: (value: unknown) => string): JsonObject;

  /** Resources whose change changes this one's behaviour (dry-run dependents), by id. */
  readonly dependsOnIds?: readonly string[];
  /** What this object depends on, as `<id>:<name>` (a nested name with its parent's: `vault/secret`). */
  dependsOn?(obj: JsonObject, tenant: string): string[];

  /** /v1/state: runtime members added to a stored object (members it configures win). */
  derivedState?(value: JsonObject, ctx: StateContext): Promise<JsonObject>;
  /** /v1/state: the items of a read after the stored ones (objects that exist in effect). */
  stateItems?(items: StateItem[], addressed: { kind: string; name?: string }, ctx: StateContext): Promise<StateItem[]>;
  /** /v1/state of one item, shown as is (no fields, no defaults): a secret in clear. */
  itemState?(stored: JsonObject, ctx: { strongbox: Strongbox; key: string; name: string }): JsonObject;
  /** /v1/state members `fields` may name besides the schema's (and the OpenAPI document shows). */
  readonly stateMembers?: Readonly<Record<string, Schema>>;

  /** OpenAPI: the schema clients see (write-only and server-set members marked). */
  publicSchema?(schema: Schema): Schema;
  /** OpenAPI: the reply of a state read of one item, when it is not the object. */
  readonly itemStateSchema?: Schema;
};

/** A resource: what its module declares, and its paths and store keys derived from its segments. */
export type ResourceModule = ResourceSpec & ResourcePaths;

/** Makes a resource module from its declaration. */
export function resource(spec: ResourceSpec): ResourceModule {
  return { ...spec, ...pathsOf(spec.segments, spec.shape) };
}
