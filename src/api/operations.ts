/** Operations under /v1 (`/v1/<operation>`): unseal the secret store. */
import { Hono } from 'hono';
import { ApiError } from '../errors.js';
import { isObject } from '../json.js';
import { parseQuery, refuseDryRun } from '../query/params.js';
import type { AppDeps, AppEnv } from './deps.js';
import { methodNotAllowed, options, principalOf, readBody, searchParams } from './http.js';

export function operationRoutes(deps: AppDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const path = '/v1/strongbox/unseal';
  app.post(path, async (c) => {
    const params = searchParams(c);
    refuseDryRun(params, path);
    parseQuery(params, []);
    deps.auth.authorize(principalOf(c), path, 'execute');
    const body = await readBody(c, 16 * 1024);
    const doc = body.docs[0];
    if (body.docs.length !== 1 || !isObject(doc) || typeof doc.key !== 'string') {
      throw new ApiError('invalid-value', 'Cannot unseal: send {"key": "<base64 of 32 bytes>"}', {
        code: 'schema-required',
        path: 'key',
      });
    }
    await deps.strongbox.unseal(doc.key, 'key');
    return new Response(null, { status: 204 });
  });
  app.options(path, () => options(['POST', 'OPTIONS'], false));
  app.all(path, (c) => {
    throw methodNotAllowed(c.req.method, path, ['POST', 'OPTIONS']);
  });
  return app;
}
