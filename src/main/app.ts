/**
 * Builds the Hono app from the route modules, every handler inside the guard (api/auth-middleware.ts:
 * authentication, and an audit record of every write, refused ones too); every thrown ApiError
 * becomes the error body `{errors: [{error-message, error-info, error-details}]}` in the negotiated encoding,
 * anything else is logged and answered 500 without internals (both by api/render-error.ts).
 */
import { Hono } from 'hono';
import { ApiError } from '../lib/errors.js';
import { auditRefusals, createGuard, guardRoutes, type Guard } from '../api/auth-middleware.js';
import { authRoutes } from '../api/auth-routes.js';
import { configRoutes } from '../api/config.js';
import { revisionRoutes } from '../api/revisions.js';
import { stateRoutes } from '../api/state.js';
import { historyRoutes } from '../api/history-routes.js';
import { uiRoutes } from '../ui/assets.js';
import { operationRoutes } from '../api/operations.js';
import { probeRoutes } from '../ops/probes.js';
import { createMetrics, metricsRoutes, type Metrics } from '../ops/metrics.js';
import type { Fleet } from '../fleet/role.js';
import { exporterSamples } from '../ops/exporter-source.js';
import { routeLabel } from '../ops/route-names.js';
import { openApiRoutes } from '../ops/openapi.js';
import { webhookOpRoutes } from '../api/webhook-ops.js';
import { renderError } from '../api/render-error.js';
import type { AppDeps, AppEnv } from '../api/deps.js';
import { withSiteReads } from '../api/site-reads.js';

/** The app's dependencies: those of the route modules, and the fleet role and metrics of the layers above api/. */
export type AppInput = AppDeps & {
  fleet?: Fleet;
  /** Where requests and deliveries are counted (one is made when absent). */
  metrics?: Metrics;
};

export function buildApp(deps: AppInput): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const guard = createGuard({ auth: deps.auth, audit: (e) => deps.auth.audit(e), renderError });
  // Routes live in these modules and reach `app` only through guardRoutes: a route added to
  // `app` directly would skip authentication and the audit.
  // The fleet's sync route has a guard of its own that accepts only site tokens (fleet/control/routes.ts),
  // deliberately outside this one, which never accepts them.
  // Their refused writes are audited as every other refused write is (auditRefusals).
  const siteGuard = auditRefusals({ audit: (e) => deps.auth.audit(e), renderError });
  for (const source of deps.fleet?.siteRoutes(deps) ?? [])
    for (const r of source.routes) app.on(r.method, r.path, siteGuard(r.handler as Parameters<Guard>[0]) as never);
  const fleetUser = deps.fleet?.userRoutes(deps) ?? [];
  const metrics = deps.metrics ?? createMetrics({ enabled: deps.settings.metricsEnabled });
  metrics.exporters(() => exporterSamples(deps.runtime));
  guardRoutes(
    app,
    [
      probeRoutes(deps),
      ...(deps.settings.metricsEnabled ? [metricsRoutes(metrics, deps.settings.metricsToken)] : []),
      openApiRoutes(),
      authRoutes(deps.auth),
      operationRoutes(deps),
      revisionRoutes(deps),
      configRoutes(deps),
      // At a control plane, site=<another site> on these reads is answered for that site.
      withSiteReads(deps, historyRoutes(deps)),
      withSiteReads(deps, webhookOpRoutes(deps)),
      ...fleetUser,
      withSiteReads(deps, stateRoutes(deps)),
    ],
    guard,
    (route, handler) => metrics.timed(routeLabel(route), handler),
  );
  // Public on purpose, outside the guard: the status page's static files hold no data (the page
  // reads everything through the API above with the user's token).
  app.route('/', uiRoutes());
  // An unknown path is still authenticated (401 before 404) and, for a write, audited.
  app.notFound(
    metrics.timed(
      'unmatched',
      guard((c) => {
        throw new ApiError('not-found', `No resource at ${c.req.path}`, { code: 'unknown-path', path: c.req.path });
      }),
    ),
  );
  app.onError(renderError);
  return app;
}
