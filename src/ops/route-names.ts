/**
 * Route templates: the path pattern a request matched, in OpenAPI's `{param}` form, never the
 * raw path. Resource paths under /v1/config and /v1/state come from the resource table
 * (`/v1/config/volga/webhooks/{name}`); the metrics label requests with them and the OpenAPI
 * document lists them.
 */
import { pathAfter, type Ctx } from '../api/http.js';
import { resolvePath, type ResourceDef } from '../model/resources.js';

/** `/v1/state/volga/topics/:topic` → `/v1/state/volga/topics/{topic}`. */
export const openApiPath = (honoPath: string): string => honoPath.replace(/:([A-Za-z0-9_-]+)/g, '{$1}');

/** The templates of a resource under a prefix: the list (or the singleton) and, for a list, an item. */
export function resourceTemplates(prefix: string, def: ResourceDef): { base: string; item?: string } {
  const base = `${prefix}/${def.segments.map((s) => (s.startsWith(':') ? `{${s.slice(1)}}` : s)).join('/')}`;
  return def.shape === 'list' ? { base, item: `${base}/{name}` } : { base };
}

/** The template of a resource path after `prefix` ('volga/webhooks/a'), or undefined. */
export function resourceRoute(prefix: string, path: string): string | undefined {
  const r = resolvePath(path);
  if (!r) return undefined;
  let byDef = templateCache.get(prefix);
  if (!byDef) templateCache.set(prefix, (byDef = new Map()));
  let t = byDef.get(r.def);
  if (!t) byDef.set(r.def, (t = resourceTemplates(prefix, r.def)));
  return r.kind === 'item' ? t.item : t.base;
}

/** Templates by prefix and resource, built once (metrics label every request with one). */
const templateCache = new Map<string, Map<ResourceDef, { base: string; item?: string }>>();

/**
 * The metrics label of a Hono route: the route itself, or for a wildcard route over resources
 * (`/v1/config/*`) the template of the resource each request addresses (the route when none).
 */
export function routeLabel(honoPath: string): string | ((c: Ctx) => string) {
  const route = openApiPath(honoPath);
  if (!honoPath.endsWith('/*')) return route;
  const prefix = honoPath.slice(0, -2);
  return (c) => {
    try {
      return resourceRoute(prefix, pathAfter(c, prefix)) ?? route;
    } catch {
      return route;
    }
  };
}
