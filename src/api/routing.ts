/**
 * Handlers bound to the route table (route-table.ts): `on` registers a route's handler on its
 * template; `allowRoutes` then answers OPTIONS (204, `Allow`) and every other method (405) on
 * each path the app serves, from the table: no module writes its allowed methods by hand.
 */
import type { Context, Env, Handler, Hono } from 'hono';
import { methodNotAllowed, options } from './http.js';
import type { Resolved } from '../model/resources.js';
import { allowOf, honoPath, templateOf, type HonoPath, type Route } from './route-table.js';

/** The templates each app serves through `on`. */
const served = new WeakMap<object, Set<string>>();

/** Registers `handler` for `route` (its method, on its template). */
export function on<E extends Env, P extends string>(
  app: Hono<E>,
  route: Route & { path: P },
  handler: Handler<E, HonoPath<P>>,
): void {
  app.on(route.method, honoPath(route.path), handler);
  let paths = served.get(app);
  if (!paths) served.set(app, (paths = new Set()));
  paths.add(route.path);
}

type Plain = (c: Context) => Response | Promise<Response>;

/** OPTIONS and 405 on a template, as the table allows (each handler `wrap`ped, e.g. in a guard). */
export function allowRoute<E extends Env>(app: Hono<E>, template: string, wrap: (h: Plain) => Plain = (h) => h): void {
  const allow = allowOf(template);
  if (!allow) throw new Error(`${template} is not in the route table`);
  const patch = allow.includes('PATCH');
  const path = honoPath(template);
  app.options(path, wrap(() => options(allow, patch)) as Handler<E>);
  app.all(
    path,
    wrap((c) => {
      throw methodNotAllowed(c.req.method, c.req.path, allow);
    }) as Handler<E>,
  );
}

/** The methods a resource path under `prefix` allows (its template's, in the table). */
export function resourceAllow(prefix: string, r: Pick<Resolved, 'def' | 'kind'>): readonly string[] {
  const template = templateOf(prefix, r);
  const allow = allowOf(template);
  if (!allow) throw new Error(`${template} is not in the route table`);
  return allow;
}

/** OPTIONS and 405 on every path `app` serves through `on` (call it after the handlers). */
export function allowRoutes<E extends Env>(app: Hono<E>, wrap?: (h: Plain) => Plain): void {
  for (const template of served.get(app) ?? []) allowRoute(app, template, wrap);
}
