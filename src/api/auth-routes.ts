/**
 * POST /v1/login {username, password} → {token, expires-in, expires, creation-time}, and
 * POST /v1/state/strongbox/token/refresh (same reply, for the caller's own token; like every
 * other endpoint it needs a policy allowing `execute` on its path — the built-in admin policy
 * does). Token replies are never cached.
 */
import { Hono, type Context } from 'hono';
import { parseBody } from './body.js';
import { noBody } from './http.js';
import { contentTypeOf, encode, negotiate } from './reply.js';
import { routes } from './route-table.js';
import { allowRoutes, on } from './routing.js';
import { ApiError } from '../lib/errors.js';
import { isObject } from '../lib/json.js';
import { refuseDryRun } from '../query/params.js';
import type { Auth } from '../auth/auth.js';
import { clientAddress } from '../auth/client.js';
import type { AuthVariables } from './auth-middleware.js';
import type { TokenReply } from '../auth/tokens.js';

export const refreshPath = routes.refresh.path;

/** A login body is two short strings; anything much larger is not one. */
const maxLoginBytes = 16 * 1024;

async function readCredentials(c: Context): Promise<{ username: string; password: string }> {
  const declared = Number(c.req.header('content-length') ?? 0);
  if (declared > maxLoginBytes)
    throw new ApiError('payload-too-large', `Cannot log in: the body is larger than ${maxLoginBytes} bytes`, {
      code: 'body-too-large',
      path: '/v1/login',
    });
  const text = await c.req.text();
  if (text.length > maxLoginBytes)
    throw new ApiError('payload-too-large', `Cannot log in: the body is larger than ${maxLoginBytes} bytes`, {
      code: 'body-too-large',
      path: '/v1/login',
    });
  const { docs } = parseBody(text, c.req.header('content-type'));
  const body = docs[0];
  if (docs.length !== 1 || !isObject(body))
    throw new ApiError('invalid-document', 'Cannot log in: the body must be one object {username, password}', {
      code: 'invalid-login',
      path: '',
    });
  for (const field of ['username', 'password'] as const) {
    if (typeof body[field] !== 'string' || body[field] === '') {
      throw new ApiError('invalid-value', `Cannot log in: ${field} must be a non-empty string`, {
        code: 'invalid-login',
        path: `/${field}`,
      });
    }
  }
  const extra = Object.keys(body).find((k) => k !== 'username' && k !== 'password');
  if (extra !== undefined)
    throw new ApiError(
      'invalid-value',
      `Cannot log in: unknown field ${JSON.stringify(extra)}; send only username and password`,
      { code: 'invalid-login', path: `/${extra}` },
    );
  return { username: String(body.username), password: String(body.password) };
}

/** Login and refresh take no query parameter; dry-run and validate are refused as on every operation. */
function noQuery(c: Context): void {
  const params = new URL(c.req.url).searchParams;
  refuseDryRun(params, c.req.path);
  for (const name of params.keys()) {
    throw new ApiError('invalid-query', `Cannot use the ${name} parameter: ${c.req.path} takes no query parameter`, {
      code: 'unknown-parameter',
      parameter: name,
    });
  }
}

function tokenReply(c: Context, reply: TokenReply): Response {
  const format = negotiate(c.req.header('accept'));
  return new Response(encode(reply, format), {
    status: 200,
    headers: { 'content-type': contentTypeOf(format), 'cache-control': 'no-store' },
  });
}

export function authRoutes(auth: Auth): Hono<{ Variables: AuthVariables }> {
  const app = new Hono<{ Variables: AuthVariables }>();
  on(app, routes.login, async (c) => {
    noQuery(c);
    // Negotiate first: a 406 must not cost a login attempt.
    negotiate(c.req.header('accept'));
    const { username, password } = await readCredentials(c);
    return tokenReply(c, await auth.login(username, password, clientAddress(c)));
  });
  on(app, routes.refresh, async (c) => {
    noQuery(c);
    // The principal is set by the guard (middleware.ts); authenticate here when mounted without it.
    const principal = c.get('principal') ?? (await auth.authenticate(c.req.header('authorization')));
    auth.authorize(principal, refreshPath, 'execute');
    await noBody(c, 'refresh the token');
    return tokenReply(c, await auth.refresh(principal));
  });
  // Both are operations: OPTIONS lists POST, any other method is a 405 (not a 404).
  allowRoutes(app);
  return app;
}
