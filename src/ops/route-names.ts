/**
 * Metrics route labels: the route template a request matched (api/route-table.ts), never the
 * raw path. Handlers are registered on their table templates, so a route's label is its Hono
 * path in OpenAPI's `{param}` form; a wildcard route over resources (`/v1/config/*`) labels
 * each request with the template of the resource it addresses.
 */
import { pathAfter, type Ctx } from '../api/http.js';
import { templateOf } from '../api/route-table.js';
import { resolvePath } from '../model/resources.js';

/** `/v1/state/volga/topics/:topic` → `/v1/state/volga/topics/{topic}`. */
export const openApiPath = (honoPath: string): string => honoPath.replace(/:([A-Za-z0-9_-]+)/g, '{$1}');

/** The template of a resource path after `prefix` ('volga/webhooks/a'), or undefined. */
export function resourceRoute(prefix: string, path: string): string | undefined {
  const r = resolvePath(path);
  return r ? templateOf(prefix, r) : undefined;
}

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
