/**
 * `POST <state path>/rollout/resume` and `/rollout/abort` at a control plane (CONTRACT §11): the
 * route table's rollout operations of every resource (api/route-table.ts `rolloutRoutes`),
 * carried out by rollouts.ts. 204 once the record is written and this process's projector has
 * given the sites what the new state means; 404 for an object that does not exist; 409 with
 * `rollout-state` when the object has no rollout of its current content, or one in another state
 * (resume: paused only; abort: progressing or paused).
 */
import { Hono } from 'hono';
import type { AppDeps, AppEnv } from '../../api/deps.js';
import { noBody, principalOf, searchParams } from '../../api/http.js';
import { rolloutRoutes } from '../../api/route-table.js';
import { allowRoutes, on } from '../../api/routing.js';
import { ApiError } from '../../lib/errors.js';
import { parseQuery, refuseDryRun } from '../../query/params.js';
import { resolvePath } from '../../model/resources.js';
import { configKey } from '../../store/keys.js';
import type { Rollouts } from './rollouts.js';

export function rolloutOpRoutes(deps: AppDeps, rollouts: Rollouts): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  for (const route of rolloutRoutes) {
    const verb = route.path.endsWith('/resume') ? 'resume' : 'abort';
    on(app, route, async (c) => {
      const p = principalOf(c);
      refuseDryRun(searchParams(c), c.req.path);
      parseQuery(searchParams(c), route.query);
      deps.auth.authorize(p, c.req.path, 'execute');
      await noBody(c, `${verb} a rollout`);
      const path = c.req.path.slice('/v1/state/'.length, -`/rollout/${verb}`.length);
      const r = resolvePath(path);
      const key = r && r.kind !== 'list' ? configKey(p.tenant, r.path) : undefined;
      if (!r || !key || !(await deps.store.get(key, { fresh: true })))
        throw new ApiError('not-found', `No object at /v1/config/${path}`, {
          code: 'missing',
          'x-path': `/v1/config/${path}`,
        });
      const done = await rollouts[verb](key, p.user);
      if (done !== 'ok') {
        const why =
          done === 'none'
            ? 'it has no staged rollout of its current content (add `rollout` to it, or wait for the control plane to start one)'
            : verb === 'resume'
              ? 'its rollout is not paused'
              : 'its rollout is already done or rolled back';
        throw new ApiError('conflict', `Cannot ${verb} the rollout of /v1/config/${path}: ${why}`, {
          code: 'rollout-state',
          'x-path': `/v1/config/${path}`,
        });
      }
      return new Response(null, { status: 204 });
    });
  }
  allowRoutes(app);
  return app;
}
