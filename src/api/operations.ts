/**
 * Operations of the secret store under /v1 (`/v1/OPERATION`): `init` creates the master key of
 * an uninitialised store and answers it once; `unseal` accepts only that key.
 */
import { Hono } from 'hono';
import { ApiError } from '../lib/errors.js';
import { isObject } from '../lib/json.js';
import { parseQuery, refuseDryRun } from '../query/params.js';
import type { AppDeps, AppEnv } from './deps.js';
import { noBody, principalOf, readBody, reply, searchParams, type Ctx } from './http.js';
import { routes } from './route-table.js';
import { allowRoutes, on } from './routing.js';

export function operationRoutes(deps: AppDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  /** Query checked (no dry-run, no other parameter) and the caller allowed to execute `path`. */
  const admit = (c: Ctx, path: string) => {
    const params = searchParams(c);
    refuseDryRun(params, path);
    parseQuery(params, routes.unseal.query);
    deps.auth.authorize(principalOf(c), path, 'execute');
  };

  const unseal = routes.unseal.path;
  on(app, routes.unseal, async (c) => {
    admit(c, unseal);
    const body = await readBody(c, 16 * 1024);
    const doc = body.docs[0];
    if (body.docs.length !== 1 || !isObject(doc) || doc.key === undefined) {
      throw new ApiError('invalid-value', 'Cannot unseal: send {"key": "<base64 of 32 bytes>"}', {
        code: 'schema-required',
        path: 'key',
      });
    }
    if (typeof doc.key !== 'string')
      throw new ApiError('invalid-value', 'Cannot unseal: key must be a string (base64 of 32 bytes)', {
        code: 'schema-type',
        path: 'key',
      });
    // A closed body, as every schema and the login's: a misspelt member is a 400, not ignored.
    const extra = Object.keys(doc).find((k) => k !== 'key');
    if (extra !== undefined)
      throw new ApiError('invalid-value', `Cannot unseal: unknown field ${JSON.stringify(extra)}; send only key`, {
        code: 'unknown-field',
        path: extra,
      });
    await deps.strongbox.unseal(doc.key, 'key');
    return new Response(null, { status: 204 });
  });

  const init = routes.init.path;
  on(app, routes.init, async (c) => {
    admit(c, init);
    await noBody(c, 'init');
    const key = await deps.strongbox.init();
    return reply(c, 200, { key }, { headers: { 'cache-control': 'no-store' } });
  });

  allowRoutes(app);
  return app;
}
