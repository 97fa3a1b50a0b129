/**
 * The route table: every route the server answers, declared once (method, path template, query
 * parameters, body, replies per status, who may call it). What derives from it:
 *   - OPTIONS, `Allow` and 405 on every path (`allowOf`; routing.ts registers them);
 *   - the handlers' query parameters (`parseQuery(…, route.query)`);
 *   - the paths the guard answers without a token (`publicPaths`);
 *   - the metrics route labels (handlers are registered on the template, ops/route-names.ts);
 *   - the OpenAPI document (ops/openapi.ts), whose replies test/ops/replies.test.ts checks
 *     against what the server really answers.
 * Adding a route = one entry here (`fixed`, or a resource in resources/ for /v1/config and
 * /v1/state) and its handler registered with `on(app, routes.<name>, …)` (routing.ts).
 */
import { resources, type ResourceDef, type Resolved } from '../model/resources.js';
import type { QueryParam } from '../query/params.js';
import {
  attemptsReply,
  bodyOk,
  dryRunReply,
  etagHeader,
  historyReply,
  json,
  list,
  listReply,
  locationHeader,
  noStore,
  objectBody,
  patchBody,
  probeBody,
  ref,
  tokenReply,
  topicInfo,
  watchable,
  type Obj,
} from './route-schemas.js';

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

/**
 * Who may call a route: `user` (a user's Bearer token, through the app's guard), `public` (no
 * token, on purpose), `site` (an edge site's token, through the fleet routes' own guard).
 */
export type Access = 'user' | 'public' | 'site';

/** A reply: a description, or an OpenAPI response object (content per media type, headers). */
export type Reply = string | Obj;

export type Route = {
  /** The OpenAPI operationId. */
  readonly id: string;
  readonly method: Method;
  /** The path template, OpenAPI's form (`/v1/state/volga/topics/{topic}`). */
  readonly path: string;
  readonly tag: string;
  readonly summary: string;
  readonly access: Access;
  /** The query parameters it accepts (any other is a 400 `unknown-parameter`). */
  readonly query: readonly QueryParam[];
  /** Other parameters, as OpenAPI parameter objects (a site's `version`, a header). */
  readonly otherParams?: readonly Obj[];
  /** The OpenAPI requestBody. */
  readonly body?: Obj;
  /** Replies that are not errors, by status. */
  readonly replies: Readonly<Record<number, Reply>>;
  /** Error replies (the error body), by status. */
  readonly errors: readonly number[];
};

const readErrors = [400, 401, 403, 404, 406];
const writeErrors = [400, 401, 403, 404, 406, 409, 412, 413, 415];

/** The query parameters of the resource routes (api/config.ts, api/state.ts parse with these). */
export const resourceQuery = {
  configAll: ['with-defaults', 'send-etag', 'include-tenant-config', 'match-path', 'fields', 'where', 'watch'],
  configList: ['fields', 'where', 'keys', 'count', 'with-defaults', 'watch', 'validate'],
  configItem: ['fields', 'with-defaults', 'watch'],
  write: ['dry-run', 'validate'],
  multiWrite: ['dry-run', 'validate', 'default-operation'],
  stateAll: ['fields', 'where', 'match-path', 'content', 'site', 'with-defaults', 'watch'],
  stateList: ['fields', 'where', 'keys', 'count', 'content', 'site', 'with-defaults', 'watch'],
  stateItem: ['fields', 'where', 'content', 'site', 'with-defaults', 'watch'],
} as const satisfies Record<string, readonly QueryParam[]>;

/** A route with its path's literal type kept (routing.ts types the handler's path parameters with it). */
const route = <const P extends string>(
  r: Omit<Route, 'query' | 'errors' | 'path'> & { path: P; query?: readonly QueryParam[]; errors?: readonly number[] },
): Route & { path: P } => ({ query: [], errors: [], ...r });

/** The conditional request headers (RFC 9110 13.1) of the routes that evaluate them. */
const conditionHeaders: readonly Obj[] = [
  {
    name: 'If-Match',
    in: 'header',
    required: false,
    description:
      'Only when the ETag is one of these (strong comparison) or `*` (it exists); else 412. Where there is no ETag (the whole /v1/config, /v1/state), only `*` holds',
    schema: { type: 'string' },
  },
  {
    name: 'If-None-Match',
    in: 'header',
    required: false,
    description:
      'Only when the ETag is none of these (weak comparison) and, for `*`, when nothing exists; else a read is 304, a write 412',
    schema: { type: 'string' },
  },
];

const multiWrite = (id: string, method: Method): Route =>
  route({
    id,
    method,
    path: '/v1/config',
    tag: 'config',
    summary: 'Apply several objects in one transaction (all or nothing)',
    access: 'user',
    query: resourceQuery.multiWrite,
    otherParams: conditionHeaders,
    body: {
      required: true,
      content: objectBody({ oneOf: [list(ref('x-object')), ref('x-object')] }),
    },
    replies: { 204: 'Applied (validate: valid)', 200: bodyOk(dryRunReply, 'dry-run: what would change') },
    errors: writeErrors,
  });

const siteRoute = <const P extends string>(r: Omit<Route, 'access' | 'tag' | 'path'> & { path: P }) =>
  route({ ...r, access: 'site', tag: 'fleet' });

/** The routes that are not resources, by name (handlers register with these). */
/** The sync stream's parameters, GET or POST. */
const syncParams: Obj[] = [
  {
    name: 'after',
    in: 'query',
    required: false,
    description: 'The version to resume after (as Last-Event-ID)',
    schema: { type: 'string' },
  },
  {
    name: 'x-edgeplane-site-key',
    in: 'header',
    required: true,
    description: "The site's X25519 public key (base64url, 32 bytes): secrets are sealed for it",
    schema: { type: 'string', pattern: '^[A-Za-z0-9_-]{43}$' },
  },
];

export const routes = {
  healthz: route({
    id: 'healthz',
    method: 'GET',
    path: '/healthz',
    tag: 'ops',
    summary: 'Liveness',
    access: 'public',
    replies: { 200: { description: 'Alive', content: json(probeBody) } },
  }),
  readyz: route({
    id: 'readyz',
    method: 'GET',
    path: '/readyz',
    tag: 'ops',
    summary: 'Readiness: every check named',
    access: 'public',
    replies: {
      200: { description: 'Ready', content: json(probeBody) },
      503: { description: 'Not ready (the failing checks say why)', content: json(probeBody) },
    },
  }),
  metrics: route({
    id: 'metrics',
    method: 'GET',
    path: '/metrics',
    tag: 'ops',
    summary: 'Prometheus metrics (Bearer METRICS_TOKEN when it is set; served when METRICS is not off)',
    access: 'public',
    replies: { 200: { description: 'Text format', content: { 'text/plain': { schema: { type: 'string' } } } } },
    errors: [401],
  }),
  openApiJson: route({
    id: 'openApiJson',
    method: 'GET',
    path: '/v1/openapi.json',
    tag: 'ops',
    summary: 'This document',
    access: 'public',
    replies: { 200: { description: 'OpenAPI 3.1', content: json({ type: 'object' }) } },
    errors: [400],
  }),
  openApiYaml: route({
    id: 'openApiYaml',
    method: 'GET',
    path: '/v1/openapi.yaml',
    tag: 'ops',
    summary: 'This document in YAML',
    access: 'public',
    replies: { 200: { description: 'OpenAPI 3.1', content: { 'application/yaml': { schema: { type: 'object' } } } } },
    errors: [400],
  }),
  ui: route({
    id: 'uiRedirect',
    method: 'GET',
    path: '/ui',
    tag: 'ui',
    summary: 'The status page: redirects to /ui/',
    access: 'public',
    replies: { 301: { description: 'To /ui/', headers: locationHeader } },
  }),
  uiIndex: route({
    id: 'uiIndex',
    method: 'GET',
    path: '/ui/',
    tag: 'ui',
    summary: "The status page (static; it reads the API with the user's token)",
    access: 'public',
    replies: {
      200: { description: 'The page', content: { 'text/html': { schema: { type: 'string' } } }, headers: etagHeader },
      304: 'Not modified (If-None-Match)',
      503: { description: 'The page is not built', content: { 'text/plain': { schema: { type: 'string' } } } },
    },
  }),
  uiFile: route({
    id: 'uiFile',
    method: 'GET',
    path: '/ui/{file}',
    tag: 'ui',
    summary: 'A file of the status page (script, style sheet)',
    access: 'public',
    replies: {
      200: { description: 'The file', content: { '*/*': { schema: { type: 'string' } } }, headers: etagHeader },
      304: 'Not modified (If-None-Match)',
      503: { description: 'The page is not built', content: { 'text/plain': { schema: { type: 'string' } } } },
    },
    errors: [404],
  }),
  login: route({
    id: 'login',
    method: 'POST',
    path: '/v1/login',
    tag: 'auth',
    summary: 'Log in: a Bearer token',
    access: 'public',
    body: {
      required: true,
      content: objectBody({
        type: 'object',
        properties: { username: { type: 'string' }, password: { type: 'string' } },
        required: ['username', 'password'],
      }),
    },
    replies: { 200: { ...bodyOk(tokenReply), headers: noStore } },
    errors: [400, 401, 406, 413, 415, 429],
  }),
  refresh: route({
    id: 'refreshToken',
    method: 'POST',
    path: '/v1/state/strongbox/token/refresh',
    tag: 'auth',
    summary: 'A new token for this one (which ends)',
    access: 'user',
    replies: { 200: { ...bodyOk(tokenReply), headers: noStore } },
    errors: [400, 401, 403, 406],
  }),
  init: route({
    id: 'strongboxInit',
    method: 'POST',
    path: '/v1/strongbox/init',
    tag: 'strongbox',
    summary: 'Create the master key of an uninitialised secret store; the key is answered once',
    access: 'user',
    replies: {
      200: {
        ...bodyOk({ type: 'object', properties: { key: { type: 'string' } }, required: ['key'] }),
        headers: noStore,
      },
    },
    errors: [400, 401, 403, 406, 409, 413, 415],
  }),
  unseal: route({
    id: 'strongboxUnseal',
    method: 'POST',
    path: '/v1/strongbox/unseal',
    tag: 'strongbox',
    summary: 'Unseal the secret store with the master key',
    access: 'user',
    body: {
      required: true,
      content: objectBody({ type: 'object', properties: { key: { type: 'string' } }, required: ['key'] }),
    },
    replies: { 204: 'Unsealed' },
    errors: [400, 401, 403, 413, 415],
  }),
  configAll: route({
    id: 'getConfig',
    method: 'GET',
    path: '/v1/config',
    tag: 'config',
    summary: 'Every configuration object, each with x-path',
    access: 'user',
    query: resourceQuery.configAll,
    otherParams: conditionHeaders,
    replies: {
      200: { description: 'OK', content: watchable(list(ref('x-object'))) },
      304: 'Not modified (If-None-Match: *)',
    },
    errors: [400, 401, 406, 412],
  }),
  configPost: multiWrite('postConfig', 'POST'),
  configPatch: multiWrite('patchConfig', 'PATCH'),
  stateAll: route({
    id: 'getState',
    method: 'GET',
    path: '/v1/state',
    tag: 'state',
    summary: 'Every state object, each with x-path',
    access: 'user',
    query: resourceQuery.stateAll,
    otherParams: conditionHeaders,
    replies: {
      200: { description: 'OK', content: watchable(list(ref('x-object'))) },
      304: 'Not modified (If-None-Match: *)',
    },
    errors: [400, 401, 404, 406, 412, 503],
  }),
  topics: route({
    id: 'listTopics',
    method: 'GET',
    path: '/v1/state/volga/topics',
    tag: 'topics',
    summary: 'Topics of the message bus',
    access: 'user',
    query: ['fields', 'where', 'keys', 'count', 'site'],
    replies: { 200: bodyOk(listReply(topicInfo)) },
    errors: [400, 401, 403, 404, 406, 503],
  }),
  topic: route({
    id: 'getTopic',
    method: 'GET',
    path: '/v1/state/volga/topics/{topic}',
    tag: 'topics',
    summary: 'One topic: length and last entry',
    access: 'user',
    query: ['fields', 'site'],
    replies: { 200: bodyOk(topicInfo) },
    errors: [...readErrors, 503],
  }),
  produce: route({
    id: 'produce',
    method: 'POST',
    path: '/v1/state/volga/topics/{topic}/produce',
    tag: 'topics',
    summary: 'Produce a message on the topic',
    access: 'user',
    body: {
      required: true,
      content: objectBody({
        type: 'object',
        properties: { payload: {}, 'producer-name': { type: 'string' } },
        required: ['payload'],
        additionalProperties: false,
      }),
    },
    replies: {
      201: {
        ...bodyOk({
          type: 'object',
          properties: { seqno: { type: 'string' } },
          required: ['seqno'],
          additionalProperties: false,
        }),
        headers: locationHeader,
      },
    },
    errors: [400, 401, 403, 406, 413, 415],
  }),
  issueToken: route({
    id: 'issueSiteToken',
    method: 'POST',
    path: '/v1/state/sites/{name}/issue-token',
    tag: 'fleet',
    summary: "Issue the site's sync token (shown once; a new one revokes the previous one)",
    access: 'user',
    replies: {
      201: {
        ...bodyOk({ type: 'object', properties: { token: { type: 'string' } }, required: ['token'] }),
        headers: noStore,
      },
    },
    errors: [400, 401, 403, 404, 406],
  }),
  history: route({
    id: 'getWebhookHistory',
    method: 'GET',
    path: '/v1/state/volga/webhooks/{name}/history',
    tag: 'webhook',
    summary: 'The last 15 minutes of the exporter: delivered-counter samples every 5 s and recent errors',
    access: 'user',
    query: ['site'],
    replies: { 200: bodyOk(historyReply) },
    errors: [400, 401, 403, 404, 406, 503],
  }),
  rewind: route({
    id: 'rewindWebhook',
    method: 'POST',
    path: '/v1/state/volga/webhooks/{name}/rewind',
    tag: 'webhook',
    summary: "Move the exporter's position on every topic it consumes",
    access: 'user',
    body: {
      required: true,
      content: objectBody({
        type: 'object',
        properties: {
          to: { type: 'string', description: '`beginning`, `end`, a seqno (`1732230000000-0`) or an ISO time' },
        },
        required: ['to'],
      }),
    },
    replies: { 204: 'Moved' },
    errors: [400, 401, 403, 404, 413, 415, 503],
  }),
  attempts: route({
    id: 'getWebhookAttempts',
    method: 'GET',
    path: '/v1/state/volga/webhooks/{name}/attempts',
    tag: 'webhook',
    summary: 'The last 100 POST attempts, newest first',
    access: 'user',
    query: ['site'],
    replies: { 200: bodyOk(attemptsReply) },
    errors: [400, 401, 403, 404, 406, 503],
  }),
  restart: route({
    id: 'restartWebhook',
    method: 'POST',
    path: '/v1/state/volga/webhooks/{name}/restart',
    tag: 'webhook',
    summary: 'Restart the webhook exporter',
    access: 'user',
    replies: { 204: 'Restarted' },
    errors: [400, 401, 403, 404, 503],
  }),
  sync: siteRoute({
    id: 'siteSync',
    method: 'GET',
    path: '/v1/fleet/sites/{name}/sync',
    summary:
      "An edge site's change stream (Server-Sent Events; Last-Event-ID resumes; reset + snapshot when history is gone)",
    query: [],
    otherParams: syncParams,
    replies: {
      200: { description: 'text/event-stream', content: { 'text/event-stream': { schema: { type: 'string' } } } },
    },
    errors: [400, 401, 403, 404],
  }),
  syncWithAcks: siteRoute({
    id: 'siteSyncWithAcks',
    method: 'POST',
    path: '/v1/fleet/sites/{name}/sync',
    summary:
      "The same change stream, and the site's acknowledgements in the request body as it streams (one applied version a line)",
    query: [],
    otherParams: syncParams,
    body: {
      required: false,
      description:
        'text/plain, sent chunked for as long as the stream: each line a version the site applied (<ms>-<seq>); other lines are ignored',
      content: { 'text/plain': { schema: { type: 'string' } } },
    },
    replies: {
      200: { description: 'text/event-stream', content: { 'text/event-stream': { schema: { type: 'string' } } } },
    },
    errors: [400, 401, 403, 404],
  }),
  ack: siteRoute({
    id: 'siteAck',
    method: 'POST',
    path: '/v1/fleet/sites/{name}/ack',
    summary: 'An edge site reports the change version it applied (?version=, or the body)',
    query: [],
    otherParams: [
      {
        name: 'version',
        in: 'query',
        required: false,
        description: 'The version applied (a change-log version, <ms>-<seq>); without it, the body carries it',
        schema: { type: 'string', pattern: '^[0-9]+-[0-9]+$' },
      },
    ],
    body: {
      required: false,
      content: objectBody({ type: 'object', properties: { version: { type: 'string' } }, required: ['version'] }),
    },
    replies: { 204: 'Recorded' },
    errors: [400, 401, 403, 404],
  }),
  report: siteRoute({
    id: 'siteReport',
    method: 'POST',
    path: '/v1/fleet/sites/{name}/report',
    summary:
      "An edge site reports its state (kept as the site's last report, answered to site= reads when it is not connected)",
    query: [],
    body: {
      required: true,
      content: objectBody({
        type: 'object',
        properties: { tenants: { type: 'object', additionalProperties: { type: 'array' } } },
        required: ['tenants'],
      }),
    },
    replies: { 204: 'Stored' },
    errors: [400, 401, 403, 404, 413, 415],
  }),
  answer: siteRoute({
    id: 'siteAnswer',
    method: 'POST',
    path: '/v1/fleet/sites/{name}/answer',
    summary: 'An edge site answers a site= read sent down its sync stream (event: request)',
    query: [],
    body: {
      required: true,
      content: objectBody({
        type: 'object',
        properties: { id: { type: 'string' }, status: { type: 'integer' }, body: {} },
        required: ['id', 'status'],
      }),
    },
    replies: { 204: 'Handed to the process that asked' },
    errors: [400, 401, 403, 404, 413, 415],
  }),
  configRevisions: route({
    id: 'listConfigRevisions',
    method: 'GET',
    path: '/v1/state/config-revisions',
    tag: 'config',
    summary:
      'The configuration history: one revision per committed transaction, newest first (the reader’s tenant view)',
    access: 'user',
    query: ['count', 'where', 'fields'],
    replies: { 200: bodyOk(listReply(revisionSchema(false))) },
    errors: readErrors,
  }),
  configRevision: route({
    id: 'getConfigRevision',
    method: 'GET',
    path: '/v1/state/config-revisions/{revision}',
    tag: 'config',
    summary: 'One revision with each object before and after (secret values redacted)',
    access: 'user',
    replies: { 200: bodyOk(revisionSchema(true)) },
    errors: readErrors,
  }),
  rollback: route({
    id: 'rollbackConfig',
    method: 'POST',
    path: '/v1/config/rollback',
    tag: 'config',
    summary: 'Restore every object changed after a revision to its content at that revision, as one transaction',
    access: 'user',
    query: ['dry-run', 'validate'],
    body: {
      required: true,
      content: objectBody({
        type: 'object',
        properties: { to: { type: ['integer', 'string'], description: 'a revision number' } },
        required: ['to'],
        additionalProperties: false,
      }),
    },
    replies: {
      200: bodyOk(
        {
          type: 'object',
          properties: { revision: { type: 'integer' }, 'impacted-resources': list({ type: 'object' }) },
        },
        'The new revision (dry-run: what would change)',
      ),
      204: 'validate: the rollback would be accepted',
    },
    errors: [...writeErrors, 503],
  }),
} as const satisfies Record<string, Route>;

/** A revision of the configuration history (api/revisions.ts); `detail`: with before and after. */
export function revisionSchema(detail: boolean): Obj {
  const change: Obj = {
    type: 'object',
    properties: {
      'x-path': { type: 'string' },
      'x-operation': { enum: ['create', 'replace', 'delete'] },
      ...(detail ? { before: { type: 'object' }, after: { type: 'object' } } : {}),
    },
    required: ['x-path', 'x-operation'],
  };
  return {
    type: 'object',
    properties: {
      revision: { type: 'integer' },
      time: { type: 'string' },
      user: { type: 'string' },
      tenant: { type: 'string' },
      changes: list(change),
    },
  };
}

/** The templates of a resource under a prefix: the list (or the singleton) and, for a list, an item. */
export function resourceTemplates(prefix: string, def: ResourceDef): { base: string; item?: string } {
  const base = `${prefix}/${def.segments.map((s) => (s.startsWith(':') ? `{${s.slice(1)}}` : s)).join('/')}`;
  return def.shape === 'list' ? { base, item: `${base}/{name}` } : { base };
}

/** Templates by prefix and resource, built once (every resource request looks its template up). */
const templateCache = new Map<string, Map<ResourceDef, { base: string; item?: string }>>();

/** The template a resolved resource path has under `prefix` (`/v1/config/volga/webhooks/{name}`). */
export function templateOf(prefix: string, r: Pick<Resolved, 'def' | 'kind'>): string {
  let byDef = templateCache.get(prefix);
  if (!byDef) templateCache.set(prefix, (byDef = new Map()));
  let t = byDef.get(r.def);
  if (!t) byDef.set(r.def, (t = resourceTemplates(prefix, r.def)));
  return r.kind === 'item' && t.item ? t.item : t.base;
}

const pascal = (id: string) => id.replace(/(^|-)([a-z])/g, (_m, _d, ch: string) => ch.toUpperCase());

/** Schema names of a resource in the document: as written, as a reply shows it, as state. */
export const schemaNames = (def: ResourceDef) => ({
  config: def.id,
  reply: `${def.id}-reply`,
  state: `${def.id}-state`,
});

/** The /v1/config routes of one resource (served by api/config.ts's wildcard route). */
function configRoutes(def: ResourceDef): Route[] {
  const t = resourceTemplates('/v1/config', def);
  const n = schemaNames(def);
  const P = pascal(def.id);
  const sealed = def.needsUnsealed ? [503] : [];
  const common = { tag: def.id, access: 'user', otherParams: conditionHeaders } as const;
  const writeOk = { 200: bodyOk(dryRunReply, 'dry-run: what would change') };
  const at = t.item ?? t.base;
  const one: Route[] = [
    route({
      ...common,
      id: `get${P}`,
      method: 'GET',
      path: at,
      summary: `Read the ${def.id}`,
      query: resourceQuery.configItem,
      replies: {
        200: { description: 'OK', content: watchable(ref(n.reply)), headers: etagHeader },
        304: { description: 'Not modified (If-None-Match)', headers: etagHeader },
      },
      errors: [...readErrors, 412, ...sealed],
    }),
    route({
      ...common,
      id: `replace${P}`,
      method: 'PUT',
      path: at,
      summary: `Create or replace the ${def.id}`,
      query: resourceQuery.write,
      body: { required: true, content: objectBody(ref(n.config)) },
      replies: {
        ...writeOk,
        201: { description: 'Created', headers: { ...etagHeader, ...locationHeader } },
        204: { description: 'Replaced (validate: valid)', headers: etagHeader },
      },
      errors: [...writeErrors, ...sealed],
    }),
    route({
      ...common,
      id: `patch${P}`,
      method: 'PATCH',
      path: at,
      summary: `Patch the ${def.id} (merge patch or JSON Patch)`,
      query: resourceQuery.write,
      body: patchBody,
      replies: { ...writeOk, 204: { description: 'Patched', headers: etagHeader } },
      errors: [...writeErrors, ...sealed],
    }),
    route({
      ...common,
      id: `delete${P}`,
      method: 'DELETE',
      path: at,
      summary: `Delete the ${def.id}`,
      query: resourceQuery.write,
      replies: { ...writeOk, 204: 'Deleted' },
      errors: [...writeErrors, ...sealed],
    }),
  ];
  if (!t.item) return one;
  return [
    route({
      ...common,
      id: `list${P}`,
      method: 'GET',
      path: t.base,
      summary: `List ${def.id} objects`,
      query: resourceQuery.configList,
      replies: {
        200: { description: 'OK', content: watchable(listReply(ref(n.reply))), headers: etagHeader },
        304: { description: 'Not modified (If-None-Match)', headers: etagHeader },
      },
      errors: [...readErrors, 412, ...sealed],
    }),
    route({
      ...common,
      id: `create${P}`,
      method: 'POST',
      path: t.base,
      summary: `Create a ${def.id} (its name in the body)`,
      query: resourceQuery.write,
      body: { required: true, content: objectBody(ref(n.config)) },
      replies: {
        ...writeOk,
        201: { description: 'Created', headers: { ...etagHeader, ...locationHeader } },
        204: 'validate: valid',
      },
      errors: [...writeErrors, ...sealed],
    }),
    ...one,
  ];
}

/** The /v1/state routes of one resource (served by api/state.ts's wildcard route). */
function stateRoutes(def: ResourceDef): Route[] {
  const t = resourceTemplates('/v1/state', def);
  const n = schemaNames(def);
  const P = pascal(def.id);
  const errors = [...readErrors, 412, 503];
  const notModified = { 304: 'Not modified (If-None-Match: *)' };
  const item = route({
    id: `get${P}State`,
    method: 'GET',
    path: t.item ?? t.base,
    tag: def.id,
    summary: `Read the state of the ${def.id}`,
    access: 'user',
    query: resourceQuery.stateItem,
    otherParams: conditionHeaders,
    replies: { 200: { description: 'OK', content: watchable(def.itemStateSchema ?? ref(n.state)) }, ...notModified },
    errors,
  });
  if (!t.item) return [item];
  return [
    route({
      id: `list${P}State`,
      method: 'GET',
      path: t.base,
      tag: def.id,
      summary: `State of every ${def.id}`,
      access: 'user',
      query: resourceQuery.stateList,
      otherParams: conditionHeaders,
      replies: { 200: { description: 'OK', content: watchable(listReply(ref(n.state))) }, ...notModified },
      errors,
    }),
    item,
  ];
}

/**
 * A staged rollout's operations on one object (CONTRACT §11): `POST <state path>/rollout/resume`
 * and `/rollout/abort` (served at a control plane by fleet/control/rollout-routes.ts).
 */
function rolloutOps(def: ResourceDef): Route[] {
  const t = resourceTemplates('/v1/state', def);
  const P = pascal(def.id);
  const at = t.item ?? t.base;
  const op = (verb: 'resume' | 'abort', summary: string, done: string) =>
    route({
      id: `${verb}${P}Rollout`,
      method: 'POST',
      path: `${at}/rollout/${verb}`,
      tag: def.id,
      summary,
      access: 'user',
      replies: { 204: done },
      errors: [400, 401, 403, 404, 409],
    });
  return [
    op('resume', `Resume the paused staged rollout of the ${def.id}`, 'Resumed'),
    op('abort', `Abort the staged rollout of the ${def.id}: every site gets the previous content back`, 'Rolled back'),
  ];
}

/** The rollout operations of every resource (an object of any of them may carry `rollout`). */
export const rolloutRoutes: readonly Route[] = resources.flatMap(rolloutOps);

/** Every route, fixed ones first, then each resource's /v1/config and /v1/state routes. */
export const routeTable: readonly Route[] = [
  ...Object.values(routes),
  ...resources.flatMap((def) => [...configRoutes(def), ...stateRoutes(def)]),
  ...rolloutRoutes,
];

const order: readonly string[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

const allowByPath = new Map<string, string[]>();
for (const r of routeTable) {
  const a = allowByPath.get(r.path) ?? ['OPTIONS'];
  if (!a.includes(r.method)) a.push(r.method);
  allowByPath.set(
    r.path,
    a.sort((x, y) => order.indexOf(x) - order.indexOf(y)),
  );
}

/** The methods a path template allows, OPTIONS included (undefined: not a route). */
export function allowOf(template: string): readonly string[] | undefined {
  return allowByPath.get(template);
}

/** The paths answered without a token, deliberately: login, probes, metrics (METRICS_TOKEN aside), the OpenAPI document, the status page's files. */
export const publicPaths: ReadonlySet<string> = new Set(
  routeTable.filter((r) => r.access === 'public').map((r) => r.path),
);

/** A template in Hono's form, as a type (`/x/{name}` → `/x/:name`). */
export type HonoPath<S extends string> = S extends `${infer A}{${infer N}}${infer B}` ? `${A}:${N}${HonoPath<B>}` : S;

/** `/v1/state/volga/topics/{topic}` → `/v1/state/volga/topics/:topic` (Hono's form). */
export const honoPath = (template: string): string => template.replace(/\{([^}]+)\}/g, ':$1');
