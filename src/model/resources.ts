/**
 * The resource registry: every configuration list and singleton the API serves, its
 * schema, which arrays are ordered, and how a URL path resolves to it.
 * Paths here are relative to /v1/config (no leading slash).
 */
import * as s from './schemas.js';
import type { Schema } from './schemas.js';
import { BoundedMap } from '../lib/bounded-cache.js';

export type ResourceDef = {
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
  /** For a nested list: the resource that must hold the enclosing key (vault of a secret). */
  readonly parent?: string;
};

const none: ReadonlySet<string> = new Set();

export const resources: readonly ResourceDef[] = [
  {
    id: 'webhook',
    segments: ['volga', 'webhooks'],
    shape: 'list',
    schema: s.webhookSchema,
    ordered: new Set(['headers']),
    needsUnsealed: true,
  },
  {
    id: 'application',
    segments: ['applications'],
    shape: 'list',
    schema: s.applicationSchema,
    ordered: none,
    needsUnsealed: false,
  },
  {
    id: 'deployment',
    segments: ['application-deployments'],
    shape: 'list',
    schema: s.deploymentSchema,
    ordered: none,
    needsUnsealed: false,
  },
  {
    id: 'site',
    segments: ['sites'],
    shape: 'list',
    schema: s.siteSchema,
    ordered: new Set(['management-ipv4-access-list']),
    listKeys: { hosts: 'host-id' },
    needsUnsealed: false,
  },
  {
    id: 'settings',
    segments: ['system', 'settings'],
    shape: 'object',
    schema: s.settingsSchema,
    ordered: none,
    needsUnsealed: false,
  },
  {
    id: 'dns-zone',
    segments: ['system', 'dns-zones'],
    shape: 'list',
    schema: s.dnsZoneSchema,
    ordered: none,
    needsUnsealed: false,
  },
  {
    id: 'user',
    segments: ['system', 'users'],
    shape: 'list',
    schema: s.userSchema,
    ordered: none,
    needsUnsealed: false,
  },
  {
    id: 'policy',
    segments: ['system', 'policies'],
    shape: 'list',
    schema: s.policySchema,
    ordered: new Set(['rules']),
    needsUnsealed: false,
  },
  {
    id: 'tenant',
    segments: ['system', 'tenants'],
    shape: 'list',
    schema: s.tenantSchema,
    ordered: none,
    needsUnsealed: false,
  },
  {
    id: 'vault',
    segments: ['strongbox', 'vaults'],
    shape: 'list',
    schema: s.vaultSchema,
    ordered: none,
    needsUnsealed: true,
  },
  {
    id: 'secret',
    segments: ['strongbox', 'vaults', ':vault', 'secrets'],
    shape: 'list',
    schema: s.secretSchema,
    ordered: none,
    needsUnsealed: true,
    parent: 'vault',
  },
];

/** The list rules of a resource, as the plain patch and the duplicate-key check take them. */
export function listRulesOf(def: ResourceDef): {
  ordered: (path: readonly string[]) => boolean;
  keyOf: (path: readonly string[]) => string;
} {
  return {
    ordered: (p) => def.ordered.has(p.join('/')),
    keyOf: (p) => def.listKeys?.[p.join('/')] ?? 'name',
  };
}

export const resourceById: ReadonlyMap<string, ResourceDef> = new Map(resources.map((r) => [r.id, r]));

export type Resolved = {
  readonly def: ResourceDef;
  /** 'list' = the list itself, 'item' = one named entry, 'object' = a singleton. */
  readonly kind: 'list' | 'item' | 'object';
  /** The path of what was addressed, e.g. 'volga/webhooks/a'. */
  readonly path: string;
  /** The same under the API, e.g. '/v1/config/volga/webhooks/a' (as in x-path). */
  readonly xPath: string;
  /** Path of the list (items) or of the object itself. */
  readonly listPath: string;
  readonly name?: string;
  /** Values of ':x' segments, e.g. {vault: 'v1'}. */
  readonly params: Readonly<Record<string, string>>;
};

function matchSegments(pattern: readonly string[], segs: readonly string[]): Record<string, string> | undefined {
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) {
    const p = pattern[i] as string;
    const v = segs[i];
    if (v === undefined) return undefined;
    if (p.startsWith(':')) params[p.slice(1)] = v;
    else if (p !== v) return undefined;
  }
  return params;
}

/** Resolves the segments after /v1/config/ (or /v1/state/) to a resource, or undefined. */
export function resolve(segs: readonly string[]): Resolved | undefined {
  for (const def of resources) {
    const n = def.segments.length;
    if (segs.length !== n && !(def.shape === 'list' && segs.length === n + 1)) continue;
    const params = matchSegments(def.segments, segs);
    if (!params) continue;
    const listPath = segs.slice(0, n).join('/');
    if (segs.length === n)
      return {
        def,
        kind: def.shape === 'list' ? 'list' : 'object',
        path: listPath,
        xPath: `/v1/config/${listPath}`,
        listPath,
        params,
      };
    const name = segs[n] as string;
    const path = `${listPath}/${name}`;
    return { def, kind: 'item', path, xPath: `/v1/config/${path}`, listPath, name, params };
  }
  return undefined;
}

/** Resolutions of recent paths (results are immutable), so a busy path resolves once. */
const recent = new BoundedMap<string, Resolved | null>(10_000);

/** Resolves a config path like 'volga/webhooks/a' (as in x-path without /v1/config/). */
export function resolvePath(path: string): Resolved | undefined {
  const hit = recent.get(path);
  if (hit !== undefined) return hit ?? undefined;
  const r = resolve(path.split('/'));
  recent.set(path, r ?? null);
  return r;
}
