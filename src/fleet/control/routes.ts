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
 *     subscription per process), and after `keepAliveMs` of silence a bookmark (as Kubernetes'
 *     watch bookmarks): `event: bookmark`, `id` = the version the stream is at, data
 *     `{"version"}`, which the site records as its resume point (it doubles as the keep-alive);
 *   - `event: request`, data `{id, tenant, path, query}`: a `site=` read sent to this site from
 *     any control-plane process (relay.ts), whenever one comes.
 * `POST /v1/fleet/sites/<name>/sync` (same guard, headers and stream): the same stream, and the
 * request's body, sent chunked for as long as the stream lasts, carries the site's
 * acknowledgements: one version it applied a line. A site's acknowledgements then cost no
 * connection of their own (what sites send; a GET's site acknowledges by the route below).
 * `POST /v1/fleet/sites/<name>/ack?version=<v>` (or a body {version}; same guard): the site
 * applied that version.
 *
 * The sync request carries the site's public key (header `x-edgeplane-site-key`, 400 without
 * it): vault secrets are sealed for it (sealing.ts). A key other than the one recorded for the
 * site is recorded, the site's secrets are sealed again for it, and the site gets a reset and a
 * snapshot whatever version it resumes from. A stream whose token was replaced (issue-token)
 * ends before its next read.
 * `POST /v1/fleet/sites/<name>/report` {tenants: {<tenant>: [state objects]}} (same guard): the
 * site's state, kept as its last report (presence.ts) → 204.
 * `POST /v1/fleet/sites/<name>/answer` {id, status, body} (same guard): the site's answer to a
 * request event, handed to the process that asked → 204.
 */
import { Hono, type Context } from 'hono';
import type { AppDeps, AppEnv } from '../../api/deps.js';
import { noBody, principalOf, readBody, reply, searchParams } from '../../api/http.js';
import { routes } from '../../api/route-table.js';
import { header } from '../../api/headers.js';
import { markLongRequest } from '../../api/node-server.js';
import type { IncomingMessage } from 'node:http';
import { allowRoutes, on } from '../../api/routing.js';
import { ApiError } from '../../lib/errors.js';
import { backoffDelay } from '../../lib/backoff.js';
import { parseQuery, refuseDryRun } from '../../query/params.js';
import { randomUUID } from 'node:crypto';
import { isObject, type Json } from '../../lib/json.js';
import { compareVersions, parseVersion, siteKeyHeader, type FleetEntry } from '../common/protocol.js';
import type { Appended, FleetLog } from './change-log.js';
import { createInboxes } from './inbox.js';
import { sseResponse, type SseSink } from './sse-sink.js';
import type { Presence } from './presence.js';
import type { FleetRelay } from './relay.js';
import { checkedTokenId, isIdOfToken, isTokenOf, issueSiteToken, revokeSiteToken, siteOfToken } from './site-tokens.js';
import { isPublicKeyText } from '../../secrets/sealed.js';
import { recordedKeyOf } from './sealing.js';
import { site } from '../../resources/site.js';
import { bearerToken } from '../../lib/bearer.js';
import { log } from '../../lib/log.js';

/**
 * Routes that run inside the app's guard (user tokens and policies). `reseal`: projects a site
 * now (its secrets follow the key it presented, or leave its log when it has none).
 */
export function fleetUserRoutes(deps: AppDeps, reseal: (site: string) => Promise<void>): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  on(app, routes.issueToken, async (c) => {
    const p = principalOf(c);
    refuseDryRun(searchParams(c), c.req.path);
    parseQuery(searchParams(c), routes.issueToken.query);
    deps.auth.authorize(p, c.req.path, 'execute');
    // A body is refused, not ignored: issuing revokes the site's token in use.
    await noBody(c, 'issue a site token');
    const name = c.req.param('name');
    const root = deps.settings.tenant;
    if (p.tenant !== root)
      throw new ApiError('forbidden', `Only users of the root tenant ${root} can issue site tokens`, {
        code: 'root-tenant-only',
        path: c.req.path,
      });
    if (!(await deps.store.get(site.keyOf(root, name))))
      throw new ApiError('not-found', `No site ${name}: create /v1/config/${site.pathOf(name)} first`, {
        code: 'missing',
        'x-path': `/v1/config/${site.pathOf(name)}`,
      });
    const token = await issueSiteToken(deps.store, name);
    // Whoever held the old token may have presented a key of its own: forget it, so secrets are
    // sealed again only for the key that comes with the new token.
    await deps.store.kvDel(recordedKeyOf(name));
    // And the site's log drops the secrets sealed for the old key now, not at a periodic pass.
    await reseal(name);
    return reply(c, 201, { token }, { headers: { 'cache-control': 'no-store' } });
  });
  allowRoutes(app);
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

/**
 * True when the site object `name` is gone (deleted at the control plane): its token is then
 * revoked, so the site syncs nothing more and one made again under its name needs a new token.
 */
async function siteGone(store: AppDeps['store'], root: string, name: string): Promise<boolean> {
  const key = site.keyOf(root, name);
  // Confirmed by a read of the store itself before anything is revoked (a process's copy may lag a create).
  if ((await store.get(key)) || (await store.get(key, { fresh: true }))) return false;
  await revokeSiteToken(store, name);
  return true;
}

/** The sync routes' guard: the current site token of `site`, nothing else. */
export async function authenticateSite(deps: AppDeps, c: Context, site: string): Promise<void> {
  const h = header(c, 'authorization') ?? '';
  const token = bearerToken(h);
  if (token === undefined)
    throw siteUnauthorized('The sync route needs Authorization: Bearer <site token>', 'missing-token');
  if (await isTokenOf(deps.store, site, token)) {
    if (await siteGone(deps.store, deps.settings.tenant, site))
      throw siteUnauthorized(`Site ${site} was deleted: its token is revoked`, 'invalid-site-token');
    return;
  }
  const owner = await siteOfToken(deps.store, token);
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

export type SyncOptions = {
  fleetLog: FleetLog;
  presence: Presence;
  relay: FleetRelay;
  keepAliveMs: number;
  batch?: number;
  /** Projects `site` now (after it presented a new key, so its secrets are sealed for it). */
  reseal?: (site: string) => Promise<void>;
};

/** The query of a site route that takes one parameter at most: 400 for any other. */
function onlyParameter(c: Context, allowed: string, route: string): URLSearchParams {
  const params = searchParams(c as Parameters<typeof searchParams>[0]);
  for (const name of params.keys())
    if (name !== allowed)
      throw new ApiError('invalid-query', `Unknown query parameter ${name}: the ${route} route takes only ${allowed}`, {
        code: 'unknown-parameter',
        parameter: name,
      });
  return params;
}

/** The site's public key from the sync request: 400 when absent or not an X25519 key. */
function presentedKey(c: Context): string {
  const key = header(c, siteKeyHeader);
  if (key === undefined)
    throw new ApiError(
      'invalid-value',
      `The sync route needs the site's public key in the ${siteKeyHeader} header: secrets are sealed for it`,
      { code: 'schema-required', path: siteKeyHeader },
    );
  if (!isPublicKeyText(key))
    throw new ApiError(
      'invalid-value',
      `The ${siteKeyHeader} header must be an X25519 public key: 32 bytes in unpadded base64url (43 characters)`,
      { code: 'bad-key', path: siteKeyHeader },
    );
  return key;
}

/** Reports and answers carry a site's whole state: larger than a configuration write may be. */
const siteBodyBytes = 32 * 1024 * 1024;

/** The one JSON object of a site's POST, or 400 naming what is wrong. */
async function siteDocument(c: Context, what: string): Promise<Record<string, unknown>> {
  const body = await readBody(c as Parameters<typeof readBody>[0], siteBodyBytes);
  const doc = body.docs[0];
  if (body.docs.length !== 1 || !isObject(doc))
    throw new ApiError('invalid-document', `Cannot take the ${what}: send one JSON object`, { code: 'not-an-object' });
  return doc;
}

/** The routes a site reports through: acknowledgements, state reports, answers to reads. */
function siteStateRoutes(app: Hono<AppEnv>, deps: AppDeps, o: SyncOptions): void {
  // The site acknowledges each version it applied: ?version=<id> (or {"version": "<id>"}) → 204.
  on(app, routes.ack, async (c) => {
    const site = c.req.param('name');
    await authenticateSite(deps, c, site);
    // `?version=` (what sites send: no body to stream in, on the busiest route) or {"version"}.
    const params = onlyParameter(c, 'version', 'ack');
    let version = params.get('version') ?? undefined;
    if (version === undefined) {
      try {
        const doc = JSON.parse(await c.req.text()) as unknown;
        if (isObject(doc) && typeof doc.version === 'string') version = doc.version;
      } catch {
        version = undefined;
      }
    }
    if (version === undefined || !parseVersion(version))
      throw new ApiError('invalid-value', 'Cannot acknowledge: send ?version=<ms>-<seq> or {"version": "<ms>-<seq>"}', {
        code: 'schema-required',
        path: 'version',
      });
    // A version past the head of the site's log was never sent: recorded, it would show the site
    // out of sync (and hold a rollout) until its next change.
    const head = (await o.fleetLog.heads([site])).get(site) ?? '0-0';
    if (compareVersions(version, head) > 0)
      throw new ApiError(
        'invalid-query',
        `Cannot acknowledge version ${version}: the log of site ${site} ends at ${head}, it was never sent`,
        { code: 'bad-value', parameter: 'version' },
      );
    await o.presence.applied(site, version);
    return new Response(null, { status: 204 });
  });

  // The site's state, in full: {"tenants": {"<tenant>": [{path, value, config}]}} → 204.
  on(app, routes.report, async (c) => {
    const site = c.req.param('name');
    await authenticateSite(deps, c, site);
    const doc = await siteDocument(c, 'state report');
    const tenants = doc.tenants;
    if (!isObject(tenants) || Object.values(tenants).some((v) => !Array.isArray(v)))
      throw new ApiError('invalid-value', 'Cannot take the state report: send {"tenants": {"<tenant>": [...]}}', {
        code: 'schema-required',
        path: 'tenants',
      });
    await o.presence.reported(site, tenants as Record<string, unknown[]>);
    return new Response(null, { status: 204 });
  });

  // The site's answer to a request event: {"id", "status", "body"} → 204.
  on(app, routes.answer, async (c) => {
    const site = c.req.param('name');
    await authenticateSite(deps, c, site);
    const doc = await siteDocument(c, 'answer');
    const status = doc.status;
    if (typeof doc.id !== 'string' || doc.id.length > 200)
      throw new ApiError('invalid-value', 'Cannot take the answer: id must be the id of the request event', {
        code: 'schema-required',
        path: 'id',
      });
    if (typeof status !== 'number' || !Number.isInteger(status) || status < 200 || status > 599)
      throw new ApiError('invalid-value', 'Cannot take the answer: status must be an HTTP status (200-599)', {
        code: 'schema-type',
        path: 'status',
      });
    await o.relay.answer(site, doc.id, { status, body: (doc.body ?? null) as Json });
    return new Response(null, { status: 204 });
  });
}

/** What one stream's loop works with: one object a stream (10,000 of them), not closures. */
type StreamOf = {
  o: SyncOptions;
  store: AppDeps['store'];
  /** The root tenant (where site objects are). */
  root: string;
  batch: number;
  stream: SseSink;
  site: string;
  /** The stream's presence id and its time to live. */
  id: string;
  ttl: number;
  /** The id of the token it was opened with (checkedTokenId). */
  tokenId: string;
  /** The site's public key presented with it: what its secrets are sealed for. */
  publicKey: string;
};

/** A `change` event; an entry from a notification carries its changes' JSON text, sent as it is. */
function sendEntry(stream: SseSink, e: FleetEntry | Appended): Promise<void> {
  const data = 'text' in e ? `{"changes":${e.text}}` : JSON.stringify({ changes: e.changes });
  return stream.send({ event: 'change', id: e.version, data });
}

/** How long a sync stream rides out Redis errors (a failover) before it ends and the site dials again. */
const redisOutageMs = 60_000;

/** True for the store's and the fleet log's "Redis is unavailable" (503), the errors a failover brings. */
function isRedisOutage(err: unknown): boolean {
  return err instanceof ApiError && err.code === 'unavailable';
}

/** Where a stream is: the version it sent last, and why it must read the log next. */
type StreamAt = {
  version: string | undefined;
  /** Read the log next: a batch was full, or a Redis error may have hidden an append. */
  more: boolean;
  /** The stream was quiet for keepAliveMs: a bookmark is due if nothing was appended. */
  quiet: boolean;
};

/** One round of a stream: a snapshot, or what was appended since `at.version`. */
async function serveStep(
  s: StreamOf,
  inbox: ReturnType<ReturnType<typeof createInboxes>>,
  at: StreamAt,
): Promise<'again' | 'wait'> {
  const { o, stream, site, batch } = s;
  const heard = inbox.take();
  if (at.version === undefined) {
    const snap = await o.fleetLog.snapshot(site);
    await stream.send({ event: 'reset', data: JSON.stringify({ version: snap.version }) });
    const objects = [...snap.objects].map(([key, value]) => ({ key, value }));
    await stream.send({ event: 'snapshot', id: snap.version, data: JSON.stringify({ objects }) });
    at.version = snap.version;
    return 'wait';
  }
  // The entries the notifications carried, while they follow on from this stream's
  // version (those it already sent are skipped); at a gap, the log is read.
  let gap = heard.missed || at.more || at.quiet;
  for (const e of heard.entries) {
    if (gap || compareVersions(e.version, at.version) <= 0) continue;
    if (e.prev !== at.version) gap = true;
    else {
      await sendEntry(stream, e);
      at.version = e.version;
    }
  }
  if (!gap) return 'wait';
  // After a quiet spell too: a notification lost while pub/sub reconnected shows here.
  const entries = await o.fleetLog.since(site, at.version, batch);
  at.more = false;
  if (entries === 'reset') {
    at.version = undefined;
    return 'again';
  }
  for (const e of entries) {
    await sendEntry(stream, e);
    at.version = e.version;
  }
  if (entries.length >= batch) {
    at.more = true; // the rest is read next, without waiting
    return 'again';
  }
  if (at.quiet && entries.length === 0)
    // A bookmark: where this stream is, so an idle site's resume point stays current.
    await stream.send({ event: 'bookmark', id: at.version, data: JSON.stringify({ version: at.version }) });
  return 'wait';
}

/**
 * Sends one site's changes down its sync stream until it ends or its token is replaced. A Redis
 * error (a failover: the primary gone, its replica not yet promoted or not yet followed) does
 * not end the stream: it tries again after 0.1–1 s and re-reads the log from its version (an
 * append notification may have been lost meanwhile), for up to a minute of errors in a row.
 * Ending it instead would send every site into its reconnection back-off (0.5 s doubling),
 * and a site that failed a few times during the failover would come back seconds after Redis.
 */
async function serve(s: StreamOf, inboxOf: ReturnType<typeof createInboxes>, start: string | undefined) {
  const { o, stream, site } = s;
  // Open before the first read, so nothing appended after that read goes unheard.
  const inbox = inboxOf(site);
  try {
    const at: StreamAt = { version: start, more: false, quiet: false };
    let lastAlive = Date.now();
    let failingSince: number | undefined;
    for (let failures = 0; !stream.closed;) {
      try {
        // A new token revokes this one: the stream ends, and no change reaches its holder.
        if (!(await isIdOfToken(s.store, site, s.tokenId))) return;
        const next = await serveStep(s, inbox, at);
        // The stream's presence is refreshed every keepAliveMs, quiet or busy.
        if (Date.now() - lastAlive >= o.keepAliveMs) {
          // Checked at the same pace (one read a stream a keep-alive, not one a step: a change
          // placed everywhere wakes every site's stream): another stream of the site presented
          // another key (a second process with its token, a reinstall), so its secrets are now
          // sealed for that key. This one ends; its site reconnects with its own key and has
          // them sealed for it again, rather than holding values it cannot open.
          // The site deleted: its stream ends and its token is revoked.
          if (await siteGone(s.store, s.root, site)) return;
          if ((await s.store.kvGet(recordedKeyOf(site))) !== s.publicKey) {
            log('warn', 'fleet: site presented another key on another stream; this stream ends', {
              site,
              note: 'two processes with one site token take turns: give each its own site',
            });
            return;
          }
          await o.presence.connected(site, s.id, s.ttl);
          lastAlive = Date.now();
        }
        failures = 0;
        failingSince = undefined;
        if (next === 'again') continue;
      } catch (err) {
        if (!isRedisOutage(err)) throw err;
        failingSince ??= Date.now();
        if (Date.now() - failingSince >= redisOutageMs) throw err;
        at.more = true; // read the log again from this stream's version
        await new Promise((r) => setTimeout(r, backoffDelay(failures++, { baseMs: 100, maxMs: 1000 })).unref());
        continue;
      }
      at.quiet = !(await inbox.wait(o.keepAliveMs)) && !stream.closed;
    }
  } finally {
    inbox.close();
  }
}

/** The longest line an acknowledgement body may carry (a version is `<ms>-<seq>`, ~30 characters). */
const ackLineMax = 100;

/**
 * Reads the acknowledgements a site streams in its sync request's body: one applied version a
 * line, each handed to `applied` as it comes (lines that are not versions, such as the empty
 * line a site opens with, are skipped; a line longer than any version ends the reading). The
 * request is exempt from HTTP_REQUEST_TIMEOUT_MS: its body lasts as long as the stream.
 */
function takeAcks(c: Context<AppEnv>, applied: (version: string) => void): void {
  const reader = new AckLines(applied);
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  if (incoming) {
    markLongRequest(incoming.socket);
    // The adapter's 'end' listener holds the whole request (Node itself has none here); all
    // removed at once, the listeners' record stays a fast object (deleting one type does not).
    incoming.removeAllListeners();
    // Buffers, not strings (no decoder a stream): versions are ASCII.
    const onData = (chunk: Buffer) => {
      if (!reader.take(chunk.toString('latin1'))) incoming.off('data', onData).resume();
    };
    incoming.on('data', onData);
    return;
  }
  // Outside Node's server (app.request in a test): the body as a web stream.
  const body = c.req.raw.body;
  if (body)
    void (async () => {
      const decoder = new TextDecoder();
      for await (const chunk of body) if (!reader.take(decoder.decode(chunk, { stream: true }))) break;
    })().catch(() => undefined);
}

/** Splits a body into lines; hands each line that is a version on. One object a stream. */
class AckLines {
  private rest = '';
  constructor(private readonly applied: (version: string) => void) {}
  /** False once a line grows longer than any version: nothing more is read. */
  take(text: string): boolean {
    const lines = (this.rest + text).split('\n');
    this.rest = lines.pop() ?? '';
    for (const line of lines) if (parseVersion(line)) this.applied(line);
    return this.rest.length <= ackLineMax;
  }
}

/** The sync route: registered by app.ts outside the user guard, behind authenticateSite. */
export function fleetSiteRoutes(deps: AppDeps, o: SyncOptions): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const inboxOf = createInboxes(o.fleetLog);
  const batch = o.batch ?? 500;
  // GET: the stream only (acknowledgements come by POST .../ack); POST: the same stream, and the
  // site's acknowledgements in the request body for as long as it lasts.
  const sync = (acksInBody: boolean) => async (c: Context<AppEnv, '/v1/fleet/sites/:name/sync'>) => {
    const site = c.req.param('name');
    await authenticateSite(deps, c, site);
    const params = onlyParameter(c, 'after', 'sync');
    const publicKey = presentedKey(c);
    const bearer = bearerToken(header(c, 'authorization')) ?? '';
    const resumeFrom = header(c, 'last-event-id') ?? params.get('after') ?? undefined;
    let start = resumeFrom;
    if ((await deps.store.kvGet(recordedKeyOf(site))) !== publicKey) {
      // A new key (first contact, a reinstalled site, a new token): seal the site's secrets
      // for it, then send everything again; what the site holds was sealed for another key.
      await deps.store.kvSet(recordedKeyOf(site), publicKey);
      await o.reseal?.(site);
      start = undefined;
    }
    const id = randomUUID();
    const ttl = o.keepAliveMs * 3;
    await o.presence.connected(site, id, ttl);
    // The version a site resumes from is the last one it applied.
    if (resumeFrom !== undefined && parseVersion(resumeFrom)) await o.presence.applied(site, resumeFrom);
    if (acksInBody) takeAcks(c, (version) => void o.presence.applied(site, version).catch(() => undefined));
    // Written straight to the socket (sse-sink.ts): a site's stream is open for hours, and the
    // control plane holds one per connected site.
    // Not an async function: a suspended one would hold a generator and its promises per stream.
    return sseResponse(c, (stream) => {
      // Reads for this site from any control-plane process go down this stream, as they come.
      const stopReads = o.relay.onRead(site, (read) => {
        if (!stream.closed) void stream.send({ event: 'request', data: JSON.stringify(read) }).catch(() => undefined); // the asker falls back to the site's last report
      });
      const gone = () => {
        stopReads();
        return o.presence.disconnected(site, id).catch(() => undefined);
      };
      stream.onClose(() => void gone());
      // The site went away mid-write: nothing to tell it; it resumes from its Last-Event-ID.
      const tokenId = checkedTokenId(bearer);
      const root = deps.settings.tenant;
      return serve(
        { o, store: deps.store, root, batch, stream, site, id, ttl, tokenId, publicKey },
        inboxOf,
        start,
      ).then(gone, gone);
    });
  };
  on(app, routes.sync, sync(false));
  on(app, routes.syncWithAcks, sync(true));

  siteStateRoutes(app, deps, o);
  // OPTIONS and 405 before the site's token is checked, as for every route (nothing is read).
  allowRoutes(app);

  return app;
}
