/**
 * Builds the Hono app from the route modules. Order: audit (records every write, refused
 * ones too) → authentication → routes; every thrown ApiError becomes the error body of
 * seed section 7 in the negotiated encoding; anything else is logged and answered 500
 * without internals.
 */
import { header } from './api/headers.js';
import { Hono } from 'hono';
import { ApiError } from './errors.js';
import { log } from './log.js';
import { auditMiddleware } from './auth/index.js';
import { authMiddleware } from './auth/middleware.js';
import { authRoutes } from './auth/routes.js';
import { configRoutes } from './api/config.js';
import { stateRoutes } from './api/state.js';
import { operationRoutes } from './api/operations.js';
import { errorResponse, negotiate, type ReplyFormat } from './api/reply.js';
import type { AppDeps, AppEnv } from './api/deps.js';

export function buildApp(deps: AppDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  // Only writes are audited: reads skip the layer entirely.
  app.on(['POST', 'PUT', 'PATCH', 'DELETE'], '*', auditMiddleware((e) => deps.auth.audit(e)));
  app.use('*', authMiddleware(deps.auth));
  app.route('/', authRoutes(deps.auth));
  app.route('/', operationRoutes(deps));
  app.route('/', configRoutes(deps));
  app.route('/', stateRoutes(deps));

  app.notFound((c) => {
    const err = new ApiError('not-found', `No resource at ${c.req.path}`, { code: 'unknown-path', path: c.req.path });
    return errorResponse(err, formatFor(header(c, 'accept')));
  });
  app.onError((err, c) => {
    const format = formatFor(header(c, 'accept'));
    if (err instanceof ApiError) return errorResponse(err, format);
    log('error', 'request failed', { method: c.req.method, path: c.req.path, error: err instanceof Error ? err.message : String(err), stack: err instanceof Error ? err.stack : undefined });
    return errorResponse(new ApiError('internal', 'Internal error: the request was not completed; see the server log'), format);
  });
  return app;
}

/** The error encoding: as negotiated, JSON when the Accept header itself is unusable. */
function formatFor(accept: string | undefined): ReplyFormat {
  try { return negotiate(accept); } catch { return 'json'; }
}
