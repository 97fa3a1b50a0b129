/**
 * The guard every route handler runs inside: Bearer authentication for every path except
 * POST /v1/login (sets `principal`, or 401 with `WWW-Authenticate: Bearer`), and for writes an
 * audit record once the answer is known, refusals (401, 403) included.
 *
 * A wrapper around each handler rather than Hono middleware, so that a request matches exactly
 * one handler: Hono then calls it directly instead of composing a promise chain, and a read
 * answered from memory (cached principal, store entry in memory) is answered synchronously
 * (README, Benchmarks: part of what brought a GET over 0.7 of a bare route).
 */
import { header } from './headers.js';
import type { Context, Hono } from 'hono';
import { record, type AuditSink } from '../auth/audit.js';
import type { Auth } from '../auth/auth.js';
import { clientAddress } from '../auth/client.js';
import type { Principal } from '../auth/principal.js';
import { publicPaths } from './route-table.js';

export type AuthVariables = { principal?: Principal };

const writeMethods: ReadonlySet<string> = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

type Ctx = Context<{ Variables: AuthVariables }>;
type Handler = (c: Ctx) => Response | Promise<Response>;

export type GuardOptions = {
  auth: Pick<Auth, 'cachedPrincipal' | 'authenticate'>;
  audit: AuditSink;
  /** Renders a thrown error as the app's error handler does (the audit needs its status). */
  renderError: (err: Error, c: Ctx) => Response | Promise<Response>;
  now?: () => number;
};

export type Guard = (handler: Handler) => Handler;

export function createGuard(opts: GuardOptions): Guard {
  const authenticated = (handler: Handler, c: Ctx): Response | Promise<Response> => {
    // The routes the table declares public (route-table.ts): login, probes, metrics, the OpenAPI document.
    if (publicPaths.has(c.req.path)) return handler(c);
    const h = header(c, 'authorization');
    const cached = opts.auth.cachedPrincipal(h);
    if (cached) {
      c.set('principal', cached);
      return handler(c);
    }
    return opts.auth.authenticate(h).then((p) => {
      c.set('principal', p);
      return handler(c);
    });
  };

  const audited = async (handler: Handler, c: Ctx): Promise<Response> => {
    let res: Response;
    try {
      res = await authenticated(handler, c);
    } catch (err) {
      res = await opts.renderError(err instanceof Error ? err : new Error(String(err)), c);
    }
    // /v1/login records its own attempts (with the username tried).
    if (c.req.path === '/v1/login') return res;
    await auditRecord(opts, c, res.status);
    return res;
  };

  return (handler) => (c) => (writeMethods.has(c.req.method) ? audited(handler, c) : authenticated(handler, c));
}

async function auditRecord(opts: Pick<GuardOptions, 'audit' | 'now'>, c: Ctx, status: number): Promise<void> {
  const principal = c.get('principal');
  await record(opts.audit, {
    user: principal?.user ?? null,
    tenant: principal?.tenant ?? null,
    method: c.req.method,
    path: c.req.path,
    status,
    time: new Date((opts.now ?? Date.now)()).toISOString(),
    'client-address': clientAddress(c),
  });
}

/**
 * The wrapper of the sites' own routes (/v1/fleet/sites/*, behind their site-token guard, not
 * this one): a write they refuse (401, 403) is audited like any other refused write; their
 * accepted ones (a site's reports and acknowledgements, every few seconds) are not.
 */
export function auditRefusals(opts: Omit<GuardOptions, 'auth'>): Guard {
  return (handler) => async (c) => {
    if (!writeMethods.has(c.req.method)) return handler(c);
    let res: Response;
    try {
      res = await handler(c);
    } catch (err) {
      res = await opts.renderError(err instanceof Error ? err : new Error(String(err)), c);
    }
    if (res.status === 401 || res.status === 403) await auditRecord(opts, c, res.status);
    return res;
  };
}

/**
 * Registers every route of `sources` on `target`, each handler inside the guard (the
 * guarded counterpart of `target.route('/', source)`).
 */
export function guardRoutes<E extends { Variables: AuthVariables }>(
  target: Hono<E>,
  sources: ReadonlyArray<Hono<E>>,
  guard: Guard,
  /** Wraps each guarded handler once more, knowing its route (metrics). */
  outer: (route: string, handler: Handler) => Handler = (_route, handler) => handler,
): void {
  for (const source of sources) {
    for (const r of source.routes) target.on(r.method, r.path, outer(r.path, guard(r.handler as Handler)) as never);
  }
}
