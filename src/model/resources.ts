/**
 * URL paths → resources: which resource of the registry (resources/index.ts) a path under
 * /v1/config (or /v1/state) addresses, as a list, one item or a singleton, and the list rules
 * of a resource. Paths here are relative to /v1/config (no leading slash).
 */
import { childrenOf, parentOf, resources, type ResourceModule } from '../resources/index.js';
import { BoundedMap } from '../lib/bounded-cache.js';

export { resources };

/** A resource of the registry: its table entry and its hooks (resources/module.ts). */
export type ResourceDef = ResourceModule;

/** The list rules of a resource, as the plain patch and the duplicate-key check take them. */
export function listRulesOf(def: ResourceDef): {
  ordered: (path: readonly string[]) => boolean;
  keyOf: (path: readonly string[]) => string;
} {
  return {
    // A rollout's waves run in the order written, on every resource (resources/rollout.ts).
    ordered: (p) => def.ordered.has(p.join('/')) || (p.length === 2 && p[0] === 'rollout' && p[1] === 'waves'),
    keyOf: (p) => def.listKeys?.[p.join('/')] ?? 'name',
  };
}

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

/**
 * The path of the object holding a nested object's enclosing key (the vault of a secret:
 * `strongbox/vaults/v1`), with its resource; undefined for a resource that is not nested.
 */
export function parentPathOf(r: Resolved): { def: ResourceDef; path: string; name: string } | undefined {
  const parent = parentOf(r.def);
  if (!parent) return undefined;
  const n = parent.segments.length;
  const name = r.params[(r.def.segments[n] ?? '').slice(1)];
  if (name === undefined) return undefined;
  return { def: parent, path: [...r.listPath.split('/').slice(0, n), name].join('/'), name };
}

/** The list paths of the objects nested under one item (`strongbox/vaults/v1/secrets`), with their resource. */
export function childListsOf(r: Resolved): Array<{ def: ResourceDef; listPath: string }> {
  if (r.kind !== 'item') return [];
  return childrenOf(r.def).map((def) => ({
    def,
    listPath: [r.path, ...def.segments.slice(r.def.segments.length + 1)].join('/'),
  }));
}
