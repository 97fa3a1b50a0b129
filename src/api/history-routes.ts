/** `GET /v1/state/volga/webhooks/<name>/history`: the samples of history.ts, read as the exporter's state is. */
import { Hono } from 'hono';
import { ApiError } from '../lib/errors.js';
import type { AppDeps, AppEnv } from './deps.js';
import { DeliveredHistory } from './history.js';
import { checkSite, principalOf, reply, searchParams } from './http.js';
import { routes } from './route-table.js';
import { allowRoutes, on } from './routing.js';
import { parseQuery } from '../query/params.js';
import { webhook } from '../resources/webhook/index.js';

export function historyRoutes(deps: AppDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  on(app, routes.history, async (c) => {
    const p = principalOf(c);
    const name = c.req.param('name');
    checkSite(deps, parseQuery(searchParams(c), routes.history.query).site);
    // Reading the history is reading the exporter's state.
    deps.auth.authorize(p, `/v1/state/${webhook.pathOf(name)}`, 'read');
    if (deps.strongbox.sealed)
      throw new ApiError('sealed', 'Cannot serve an exporter history: the secret store is sealed', { code: 'sealed' });
    if (!(await deps.store.get(webhook.keyOf(p.tenant, name))))
      throw new ApiError('not-found', `No webhook exporter ${name}`, {
        code: 'missing',
        'x-path': `/v1/config/${webhook.pathOf(name)}`,
      });
    const history = deps.history ?? new DeliveredHistory(deps.store, deps.settings.site, deps.runtime);
    return reply(c, 200, history.of(p.tenant, name));
  });
  allowRoutes(app);
  return app;
}
