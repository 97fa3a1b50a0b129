/**
 * Delivery-control operations of one webhook exporter:
 * - `POST /v1/state/volga/webhooks/<name>/rewind {"to": …}` → 204 (exporter/rewind.ts);
 * - `GET /v1/state/volga/webhooks/<name>/attempts` → its last 100 POST attempts, newest first
 *   (exporter/attempts.ts), from the store, so any process of the site can answer.
 */
import { Hono } from 'hono';
import { ApiError } from '../lib/errors.js';
import { readAttempts } from '../exporter/attempts.js';
import { groupName } from '../exporter/supervisor.js';
import { consumedTopics, parseRewindTo } from '../exporter/rewind.js';
import { tenantBus } from '../bus/tenant-topics.js';
import type { AppDeps, AppEnv } from './deps.js';
import { checkSite, principalOf, readBody, reply, searchParams } from './http.js';
import { routes } from './route-table.js';
import { allowRoutes, on } from './routing.js';
import { parseQuery, refuseDryRun } from '../query/params.js';
import { webhook } from '../resources/webhook/index.js';

export function webhookOpRoutes(deps: AppDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  // Like every webhook-exporter endpoint (CONTRACT §6): 503 while the secret store is sealed.
  const unsealed = (what: string) => {
    if (deps.strongbox.sealed)
      throw new ApiError('sealed', `Cannot ${what}: the secret store is sealed (POST /v1/strongbox/unseal)`, {
        code: 'sealed',
      });
  };
  const exporterConfig = async (tenant: string, name: string) => {
    const entry = await deps.store.get(webhook.keyOf(tenant, name));
    if (!entry)
      throw new ApiError('not-found', `No webhook exporter ${name}`, {
        code: 'missing',
        'x-path': `/v1/config/${webhook.pathOf(name)}`,
      });
    return entry.value;
  };

  on(app, routes.rewind, async (c) => {
    const p = principalOf(c);
    const name = c.req.param('name');
    refuseDryRun(searchParams(c), c.req.path);
    parseQuery(searchParams(c), routes.rewind.query);
    deps.auth.authorize(p, c.req.path, 'execute');
    unsealed('rewind an exporter');
    const cfg = await exporterConfig(p.tenant, name);
    const body = await readBody(c, deps.settings.maxBodyBytes);
    if (body.docs.length !== 1)
      throw new ApiError('invalid-document', 'Cannot rewind: send one object {"to": …}', { code: 'not-an-object' });
    const at = parseRewindTo(body.docs[0]);
    const group = groupName(p.tenant, name);
    // The tenant's own topics: a subtenant's topic T is its own stream (bus/tenant-topics.ts).
    const bus = tenantBus(deps.bus, p.tenant, deps.settings.tenant);
    const apply = async (running: string[]) => {
      const topics = new Set([...running, ...(await consumedTopics(bus, p.tenant, cfg, deps.settings.tenant))]);
      for (const t of topics) await bus.setGroupPosition(t, group, at);
    };
    // A process that runs no exporters moves the groups of the store it shares with those that do.
    let moved = true;
    if (deps.runtime?.rewind) moved = await deps.runtime.rewind(p.tenant, name, apply);
    else await apply([]);
    if (!moved)
      throw new ApiError(
        'not-found',
        `Webhook exporter ${name} does not run at this site (${deps.settings.site}): its site-placement names other sites; rewind it where it runs`,
        { code: 'not-running' },
      );
    return new Response(null, { status: 204 });
  });

  on(app, routes.attempts, async (c) => {
    const p = principalOf(c);
    const name = c.req.param('name');
    checkSite(deps, parseQuery(searchParams(c), routes.attempts.query).site);
    deps.auth.authorize(p, c.req.path, 'read');
    unsealed("read an exporter's attempts");
    await exporterConfig(p.tenant, name);
    return reply(c, 200, await readAttempts(deps.store, p.tenant, name));
  });

  allowRoutes(app);
  return app;
}
