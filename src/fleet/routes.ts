/**
 * The control plane's fleet routes.
 *
 * `POST /v1/state/sites/<name>/issue-token` (a user's route, inside the app's guard like every
 * other: needs `execute` on its path, root tenant only) → 201 {token}.
 *
 * `GET /v1/fleet/sites/<name>/sync` (the sites' route, with a guard of its own that accepts
 * only the current token of site <name>: every other Bearer token is 401, another site's token
 * 403) serves the site's change log as Server-Sent Events:
 *   - `Last-Event-ID` (or `?after=`) within the retained history: `event: change` per entry,
 *     `id` = its version, data `{"changes": [{op, key, value?}]}`;
 *   - absent, older than the history, or unknown: `event: reset` (data `{"version"}`) then
 *     `event: snapshot`, `id` = that version, data `{"objects": [{key, value}]}`;
 *   - then every new entry as it is appended (woken by the log's append notification, one
 *     subscription per process), and a `: keep-alive` comment after `keepAliveMs` of silence.
 * `POST /v1/fleet/sites/<name>/ack` {version} (same guard): the site applied that version.
 */
import { Hono, type Context } from 'hono';
import { streamSSE, type SSEStreamingApi } from 'hono/streaming';
import type { AppDeps, AppEnv } from '../api/deps.js';
import { methodNotAllowed, options, principalOf, reply, searchParams } from '../api/http.js';
import { ApiError } from '../lib/errors.js';
import { configKey } from '../store/keys.js';
import { parseQuery } from '../query/params.js';
import { randomUUID } from 'node:crypto';
import { isObject } from '../lib/json.js';
import { parseVersion, type FleetLog } from './log.js';
import type { Presence } from './presence.js';
import { issueSiteToken, siteOfToken } from './site-tokens.js';

export const syncPath = (site: string) => `/v1/fleet/sites/${site}/sync`;

/** Routes that run inside the app's guard (user tokens and policies). */
export function fleetUserRoutes(deps: AppDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const path = '/v1/state/sites/:name/issue-token';
  app.post(path, async (c) => {
    const p = principalOf(c);
    parseQuery(searchParams(c), []);
    deps.auth.authorize(p, c.req.path, 'execute');
    const name = c.req.param('name');
    const root = deps.settings.tenant;
    if (p.tenant !== root)
      throw new ApiError('forbidden', `Only users of the root tenant ${root} can issue site tokens`, {
        code: 'root-tenant-only',
        path: c.req.path,
      });
    if (!(await deps.store.get(configKey(root, `sites/${name}`))))
      throw new ApiError('not-found', `No site ${name}: create /v1/config/sites/${name} first`, {
        code: 'missing',
        'x-path': `/v1/config/sites/${name}`,
      });
    const token = await issueSiteToken(deps.store, name);
    return reply(c, 201, { token }, { headers: { 'cache-control': 'no-store' } });
  });
  app.options(path, () => options(['POST', 'OPTIONS'], false));
  app.all(path, (c) => {
    throw methodNotAllowed(c.req.method, c.req.path, ['POST', 'OPTIONS']);
  });
  return app;
}

function siteUnauthorized(message: string, code: 'missing-token' | 'invalid-site-token'): ApiError {
  return new ApiError(
    'unauthorized',
    message,
    { code },
    { headers: { 'WWW-Authenticate': 'Bearer error="invalid_token"' } },
  );
}

/** The sync routes' guard: the current site token of `site`, nothing else. */
export async function authenticateSite(deps: AppDeps, c: Context, site: string): Promise<void> {
  const h = c.req.header('authorization') ?? '';
  const m = /^Bearer (\S+)$/.exec(h);
  if (!m) throw siteUnauthorized('The sync route needs Authorization: Bearer <site token>', 'missing-token');
  const owner = await siteOfToken(deps.store, m[1]!);
  if (owner === undefined)
    throw siteUnauthorized(
      'Not a valid site token (issue one with POST /v1/state/sites/<name>/issue-token)',
      'invalid-site-token',
    );
  if (owner !== site)
    throw new ApiError('forbidden', `This token belongs to site ${owner}; it cannot sync site ${site}`, {
      code: 'other-site',
      path: c.req.path,
    });
}

export type SyncOptions = { fleetLog: FleetLog; presence: Presence; keepAliveMs: number; batch?: number };

/** Per process: wakes the streams of a site when its log grows (one subscription for all). */
function createWaker(fleetLog: FleetLog) {
  const waiting = new Map<string, Set<() => void>>();
  fleetLog.onAppend((site) => {
    const set = waiting.get(site);
    if (!set) return;
    waiting.delete(site);
    for (const fn of set) fn();
  });
  return (site: string, ms: number): Promise<boolean> =>
    new Promise((resolve) => {
      let set = waiting.get(site);
      if (!set) waiting.set(site, (set = new Set()));
      const wake = () => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        set.delete(wake);
        resolve(false);
      }, ms);
      set.add(wake);
    });
}

/** The sync route: registered by app.ts outside the user guard, behind authenticateSite. */
export function fleetSiteRoutes(deps: AppDeps, o: SyncOptions): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const wait = createWaker(o.fleetLog);
  const batch = o.batch ?? 500;
  const path = '/v1/fleet/sites/:name/sync';
  app.get(path, async (c) => {
    const site = c.req.param('name');
    await authenticateSite(deps, c, site);
    const params = searchParams(c);
    for (const name of params.keys())
      if (name !== 'after')
        throw new ApiError('invalid-query', `Unknown query parameter ${name}: the sync route takes only after`, {
          code: 'unknown-parameter',
          parameter: name,
        });
    const start = c.req.header('last-event-id') ?? params.get('after') ?? undefined;
    const id = randomUUID();
    const ttl = o.keepAliveMs * 3;
    await o.presence.connected(site, id, ttl);
    // The version a site resumes from is the last one it applied.
    if (start !== undefined && parseVersion(start)) await o.presence.applied(site, start);
    return streamSSE(
      c,
      async (stream) => {
        let aborted = false;
        stream.onAbort(() => {
          aborted = true;
          void o.presence.disconnected(site, id).catch(() => undefined);
        });
        try {
          await serve(
            stream,
            site,
            start,
            () => aborted,
            () => o.presence.connected(site, id, ttl),
          );
        } finally {
          await o.presence.disconnected(site, id).catch(() => undefined);
        }
      },
      async () => {
        // The site went away mid-write: nothing to tell it; it resumes from its Last-Event-ID.
      },
    );
  });
  app.all(path, (c) => {
    throw methodNotAllowed(c.req.method, c.req.path, ['GET']);
  });

  // The site acknowledges each version it applied: {"version": "<id>"} → 204.
  const ackPath = '/v1/fleet/sites/:name/ack';
  app.post(ackPath, async (c) => {
    const site = c.req.param('name');
    await authenticateSite(deps, c, site);
    let doc: unknown;
    try {
      doc = JSON.parse(await c.req.text());
    } catch {
      doc = undefined;
    }
    if (!isObject(doc) || typeof doc.version !== 'string' || !parseVersion(doc.version))
      throw new ApiError('invalid-value', 'Cannot acknowledge: send {"version": "<ms>-<seq>"}', {
        code: 'schema-required',
        path: 'version',
      });
    await o.presence.applied(site, doc.version);
    return new Response(null, { status: 204 });
  });
  app.all(ackPath, (c) => {
    throw methodNotAllowed(c.req.method, c.req.path, ['POST']);
  });

  async function serve(
    stream: SSEStreamingApi,
    site: string,
    start: string | undefined,
    aborted: () => boolean,
    alive: () => Promise<void>,
  ) {
    let version = start;
    while (!aborted()) {
      // Ask to be woken before reading, so an append between the read and the wait is not missed.
      const woken = wait(site, o.keepAliveMs);
      if (version === undefined) {
        const snap = await o.fleetLog.snapshot(site);
        await stream.writeSSE({ event: 'reset', data: JSON.stringify({ version: snap.version }) });
        const objects = [...snap.objects].map(([key, value]) => ({ key, value }));
        await stream.writeSSE({ event: 'snapshot', id: snap.version, data: JSON.stringify({ objects }) });
        version = snap.version;
      } else {
        const entries = await o.fleetLog.since(site, version, batch);
        if (entries === 'reset') {
          version = undefined;
          continue;
        }
        for (const e of entries) {
          await stream.writeSSE({ event: 'change', id: e.version, data: JSON.stringify({ changes: e.changes }) });
          version = e.version;
        }
        if (entries.length >= batch) continue;
      }
      if (!(await woken) && !aborted()) {
        await stream.write(': keep-alive\n\n');
        await alive();
      }
    }
  }
  return app;
}
