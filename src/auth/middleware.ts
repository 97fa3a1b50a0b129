/**
 * Bearer authentication for every path except POST /v1/login: sets `principal` for the
 * handlers, or throws 401 (ApiError with `WWW-Authenticate: Bearer`), which the app's error
 * handler renders in the negotiated encoding.
 */
import { header } from '../api/headers.js';
import type { MiddlewareHandler } from 'hono';
import type { Auth } from './auth.js';
import type { Principal } from './principal.js';

export type AuthVariables = { principal: Principal };

export const publicPaths: ReadonlySet<string> = new Set(['/v1/login']);

export function authMiddleware(auth: Auth): MiddlewareHandler<{ Variables: AuthVariables }> {
  return async (c, next) => {
    if (publicPaths.has(c.req.path)) return next();
    const h = header(c, 'authorization');
    c.set('principal', auth.cachedPrincipal(h) ?? (await auth.authenticate(h)));
    return next();
  };
}
