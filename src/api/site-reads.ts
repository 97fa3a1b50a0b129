/**
 * `site=<name>` on the /v1/state reads, both ends.
 *
 * At the control plane (`withSiteReads`, around the state, topic, history and attempt routes):
 * a read naming another site is authorized here with the caller's policies, then
 *   - forwarded live when the site is connected (fleet/control/relay.ts: down its sync stream, the
 *     answer back by POST, through Redis when several control-plane processes share it), and
 *     answered as the site answered, within 5 s;
 *   - otherwise (not connected, or no answer in time) answered from the last state the site
 *     reported (state.ts `reportSource`), with `x-state-age: <seconds>`; topics, histories and
 *     attempt logs are not part of a report, so those answer 503 `site-unreachable`.
 * A secret's state is never forwarded: a site holds the secrets its control plane sent it, and
 * a secret value never travels back up, so the control plane answers it from its own store.
 *
 * At an edge site (`createLocalReader`): the site runs a forwarded read through its own state
 * routes, with its own read rules (fields, where, content, keys, count…), in the caller's
 * tenant with the caller's read rules (sent with the read), so a list, a count or keys hold
 * only the members the caller may read; the control plane has already applied the caller's
 * policies to the path, and filters `GET /v1/state` (one object per path) by them once more.
 */
import { Hono, type Context } from 'hono';
import { ApiError } from '../lib/errors.js';
import { isObject, type Json, type JsonObject } from '../lib/json.js';
import { guardRoutes } from './auth-middleware.js';
import { adminPolicy, adminPolicyName, compilePolicies } from '../auth/policies.js';
import type { Principal } from '../auth/index.js';
import { resolvePath } from '../model/resources.js';
import type { AppDeps, AppEnv, ForwardedAnswer, ForwardedRead } from './deps.js';
import { pathAfter, principalOf, reply, searchParams } from './http.js';
import { errorResponse } from './reply.js';
import { renderError } from './render-error.js';
import { reportSource, stateReport, stateRoutes, type ReportedItem } from './state.js';
import { historyRoutes } from './history-routes.js';
import { webhookOpRoutes } from './webhook-ops.js';
import { site as siteResource } from '../resources/site.js';

type Handler = (c: Context<AppEnv>) => Response | Promise<Response>;
type Env = { principal: Principal };

/** Paths whose state is live only: a site's report does not hold them. */
const liveOnly = /^\/v1\/state\/volga\/(topics(\/|$)|webhooks\/[^/]+\/(history|attempts)$)/;

/** The routes of `sources` run with the principal given in the request's env (never from HTTP). */
function innerApp(sources: Hono<AppEnv>[]): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  guardRoutes(app, sources, (handler) => (c) => {
    c.set('principal', (c.env as Env).principal);
    return handler(c);
  });
  app.notFound((c) =>
    errorResponse(
      new ApiError('not-found', `No resource at ${c.req.path}`, { code: 'unknown-path', path: c.req.path }),
      'json',
    ),
  );
  app.onError(renderError);
  return app;
}

async function answerOf(res: Response): Promise<ForwardedAnswer> {
  const text = await res.text();
  let body: Json = null;
  try {
    body = text ? (JSON.parse(text) as Json) : null;
  } catch {
    body = text;
  }
  return { status: res.status, body };
}

/** An edge site's side: answers a forwarded read with its own state routes. */
export function createLocalReader(deps: AppDeps): (read: Omit<ForwardedRead, 'id'>) => Promise<ForwardedAnswer> {
  const app = innerApp([historyRoutes(deps), webhookOpRoutes(deps), stateRoutes(deps)]);
  const admin = compilePolicies([{ name: adminPolicyName, value: adminPolicy }]);
  return async (read) => {
    if (read.path !== '/v1/state' && !read.path.startsWith('/v1/state/'))
      return answerOf(
        errorResponse(
          new ApiError('not-found', `A site answers /v1/state reads only, not ${read.path}`, {
            code: 'unknown-path',
            path: read.path,
          }),
          'json',
        ),
      );
    const principal: Principal = {
      user: 'control-plane',
      tenant: read.tenant,
      tokenId: '',
      expires: Number.MAX_SAFE_INTEGER,
      // The caller's read rules when the control plane sent them (every member of a list, a
      // count or keys is then what the caller may read); else as an administrator of the tenant.
      policies: read.rules
        ? compilePolicies([
            {
              name: 'caller',
              value: { name: 'caller', rules: read.rules.map((r) => ({ ...r, operations: ['read'] })) },
            },
          ])
        : admin,
      tenants: new Set([read.tenant]),
    };
    const url = `http://site${read.path}${read.query ? `?${read.query}` : ''}`;
    const env: Env = { principal };
    return answerOf(await app.request(url, { headers: { accept: 'application/json' } }, env));
  };
}

/**
 * An edge site's hooks for its sync loop (fleet/site/sync-loop.ts): the reader above, and its state
 * report: per tenant (the root tenant and those whose exporters run here), `stateReport`, built
 * again when the store or an exporter's state changes.
 */
export function siteHooks(deps: AppDeps) {
  return {
    read: createLocalReader(deps),
    async report(): Promise<JsonObject> {
      const tenants = new Set([deps.settings.tenant]);
      for (const e of deps.runtime?.exporterStates?.() ?? []) tenants.add(e.tenant);
      const out: JsonObject = {};
      for (const t of [...tenants].sort()) out[t] = (await stateReport(deps, t)) as unknown as Json;
      return out;
    },
    onChange(listener: () => void): () => void {
      const stopStore = deps.store.onChange(() => listener());
      const stopState = deps.runtime?.onStateChange?.(listener);
      return () => {
        stopStore();
        stopState?.();
      };
    },
  };
}

function siteUnreachable(site: string, why: string): ApiError {
  return new ApiError('unavailable', `Cannot read site ${site}: ${why}`, {
    code: 'site-unreachable',
    parameter: 'site',
  });
}

function reportedItems(list: unknown[] | undefined): ReportedItem[] {
  const out: ReportedItem[] = [];
  for (const i of list ?? [])
    if (isObject(i) && typeof i.path === 'string' && isObject(i.value) && Array.isArray(i.config))
      out.push({ path: i.path, value: i.value, config: i.config.filter((k): k is string => typeof k === 'string') });
  return out;
}

/**
 * At a control plane: the routes of `source` with `site=<another site>` answered for that site
 * (see above); without `site=`, or naming this process's own site, the route answers as before.
 */
export function withSiteReads(deps: AppDeps, source: Hono<AppEnv>): Hono<AppEnv> {
  const reads = deps.fleet?.reads;
  if (!reads) return source;
  const out = new Hono<AppEnv>();
  // Synchronous until a read names another site: the reads of this site keep their fast path.
  const wrap =
    (handler: Handler): Handler =>
    (c) => {
      if (c.req.method !== 'GET' && c.req.method !== 'HEAD') return handler(c);
      const params = searchParams(c);
      const site = params.get('site');
      // Given twice, the route's own parsing refuses it (duplicate-parameter) when it answers here.
      if (!site || site === deps.settings.site || params.getAll('site').length > 1) return handler(c);
      return forward(c, handler, params, site);
    };
  const forward = async (c: Context<AppEnv>, handler: Handler, params: URLSearchParams, site: string) => {
    const p = principalOf(c);
    if (params.has('watch'))
      throw new ApiError('invalid-query', `Cannot watch site ${site}: a read of another site answers once`, {
        code: 'conflicting-parameters',
        parameter: 'watch',
      });
    const path = c.req.path;
    const rel = path === '/v1/state' ? '' : pathAfter(c, '/v1/state');
    const resolved = rel ? resolvePath(rel) : undefined;
    if (!(await deps.store.get(siteResource.keyOf(deps.settings.tenant, site))))
      throw new ApiError('not-found', `No site ${site} (GET /v1/config/${siteResource.pathOf()} lists them)`, {
        code: 'unknown-site',
        parameter: 'site',
      });
    // A secret's state is the control plane's own (secrets flow down only): the route answers it.
    if (resolved?.def.itemState && resolved.kind !== 'list') return handler(c);
    // The caller's policies, as the route itself would apply them (an exporter's history is its state).
    if (path !== '/v1/state') deps.auth.authorize(p, path.replace(/\/history$/, ''), 'read');
    const rest = new URLSearchParams(params);
    rest.delete('site');
    // The caller's read rules go down with the read: the site filters a list's members by them.
    const rules = p.policies.rules
      .filter((r) => r.operations.has('read'))
      .map((r) => ({ path: r.pattern.source, effect: r.effect }));
    const read = { tenant: p.tenant, path, query: rest.toString(), rules };
    const live = await reads.ask(site, read);
    if (live) {
      let body = live.body;
      // GET /v1/state: one object per path, each shown only where the caller may read it.
      if (path === '/v1/state' && live.status === 200 && Array.isArray(body))
        body = body.filter(
          (o) => isObject(o) && typeof o['x-path'] === 'string' && deps.auth.allows(p, o['x-path'], 'read'),
        );
      const res = reply(c, live.status, body, { multi: Array.isArray(body) });
      return c.req.method === 'HEAD' ? new Response(null, { status: res.status, headers: res.headers }) : res;
    }
    const report = await reads.lastReport(site);
    if (!report) throw siteUnreachable(site, 'it is not connected and has never reported its state');
    if (liveOnly.test(path))
      throw siteUnreachable(site, `it is not connected, and ${path} is live state that a site's report does not hold`);
    const age = Math.max(0, Math.floor((Date.now() - Date.parse(report.time)) / 1000));
    const stale = innerApp([stateRoutes(deps, reportSource(reportedItems(report.tenants[p.tenant])))]);
    const url = `http://site${path}${rest.size > 0 ? `?${rest.toString()}` : ''}`;
    const env: Env = { principal: p };
    const headers: Record<string, string> = {};
    const accept = c.req.header('accept');
    if (accept) headers.accept = accept;
    const res = await stale.request(url, { method: c.req.method, headers }, env);
    const h = new Headers(res.headers);
    h.set('x-state-age', String(age));
    return new Response(res.body, { status: res.status, headers: h });
  };
  for (const r of source.routes) out.on(r.method, r.path, wrap(r.handler as Handler));
  return out;
}
