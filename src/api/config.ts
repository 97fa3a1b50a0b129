/**
 * /v1/config: reads of the intended configuration and every write (single-resource and
 * transactional), all through model/transaction.ts.
 */
import { header } from './headers.js';
import { Hono } from 'hono';
import { ApiError } from '../lib/errors.js';
import { isObject, jsonKind, type Json, type JsonObject } from '../lib/json.js';
import { configKey } from '../store/keys.js';
import { resolvePath, type Resolved } from '../model/resources.js';
import { runTransaction, type Change, type TxContext, type TxMode } from '../model/transaction.js';
import { parseQuery, type ParsedQuery } from '../query/params.js';
import type { AppDeps, AppEnv } from './deps.js';
import {
  noEtagConditions,
  listReply,
  methodNotAllowed,
  options,
  principalOf,
  readBody,
  reply,
  pathAfter,
  type Ctx,
  searchParams,
} from './http.js';
import { resourceQuery, routes } from './route-table.js';
import { allowRoutes, on, resourceAllow } from './routing.js';
import { knownIn, redact, shape } from './present.js';
import { directMembers } from './list-members.js';
import { checkRoot } from '../query/matchpath.js';
import { listEtagOf, listsEtag, listsEtagWeakly } from '../store/etag.js';
import { objectProblems } from '../model/checks.js';
import type { Entry } from '../store/store.js';
import { multiObjectChanges } from './multi-object.js';
import { watchResponse, type WatchedObject } from './watch.js';
import { tenantChecks } from '../model/tenant-checks.js';

const PREFIX = routes.configAll.path;

function modeOf(q: ParsedQuery): TxMode {
  if (q.dryRun && q.validate)
    throw new ApiError('invalid-query', 'Cannot use dry-run and validate together: choose one', {
      code: 'conflicting-parameters',
      parameter: 'dry-run',
    });
  return q.dryRun ? 'dry-run' : q.validate ? 'validate' : 'commit';
}

/** The write path's context for a request: its principal's tenant, permissions and tenant tree. */
export function configTxContext(deps: AppDeps, c: Ctx): TxContext {
  const p = principalOf(c);
  return {
    store: deps.store,
    strongbox: deps.strongbox,
    tenant: p.tenant,
    rootTenant: deps.settings.tenant,
    // The commit is a revision of the configuration history, made by this user.
    actor: p.user,
    permissions: {
      allows: (path, op, t) => deps.auth.allows(p, path, op, t),
      authorize: (path, op, t) => deps.auth.authorize(p, path, op, t),
    },
    tenants: deps.auth.tenants,
    committed: (keys) => deps.auth.invalidate(keys),
  };
}

export function configRoutes(deps: AppDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  on(app, routes.configAll, (c) => readAll(c, deps));
  on(app, routes.configPost, (c) => multiWrite(deps, c));
  on(app, routes.configPatch, (c) => multiWrite(deps, c));
  allowRoutes(app);
  // Not async: a read answered from memory (store.peek) is answered synchronously.
  app.all(`${PREFIX}/*`, (c) => configPath(deps, c));
  return app;
}

/** Runs `changes` as one transaction and answers: 204 (validate), the impact (dry-run) or `success`. */
async function txReply(
  deps: AppDeps,
  c: Ctx,
  changes: Change[],
  mode: TxMode,
  success: (created: boolean, etag: string | undefined) => Response,
): Promise<Response> {
  const result = await runTransaction(configTxContext(deps, c), changes, mode);
  if (mode === 'validate') return new Response(null, { status: 204 });
  if (mode === 'dry-run') return reply(c, 200, { 'impacted-resources': result.impacted ?? [] });
  const first = changes[0];
  return success(result.created[0] ?? false, first ? result.etags[first.path] : undefined);
}

/**
 * If-Match / If-None-Match on a POST to a list: evaluated against the list's ETag (the one a GET
 * of the list answers), as on one object; a failed condition is 412 and nothing is written.
 */
async function listConditions(deps: AppDeps, c: Ctx, r: Resolved): Promise<void> {
  const im = header(c, 'if-match');
  const inm = header(c, 'if-none-match');
  if (!im && !inm) return;
  const base = configKey(principalOf(c).tenant, r.path);
  const etag = directMembers(await deps.store.list(base), base).etag;
  if ((im && !listsEtag(im, etag)) || (inm && listsEtagWeakly(inm, etag)))
    throw new ApiError(
      'precondition-failed',
      `Cannot create in ${c.req.path}: ${im && !listsEtag(im, etag) ? 'If-Match does not name' : 'If-None-Match names'} the list's ETag (GET ${c.req.path} answers it)`,
      { code: 'etag-mismatch' },
    );
}

/**
 * If-Match / If-None-Match on /v1/config itself, which has no ETag (each object has one: give
 * `x-etag` per object): only `If-Match: *` holds (the configuration exists); anything else is a
 * condition that cannot hold, 412, and nothing is written.
 */
function wholeTreeConditions(c: Ctx): void {
  const im = header(c, 'if-match');
  const inm = header(c, 'if-none-match');
  if ((im && im.trim() !== '*') || inm?.trim() === '*')
    throw new ApiError(
      'precondition-failed',
      `Cannot write ${PREFIX}: it has no ETag for ${im ? 'If-Match' : 'If-None-Match'} to compare; give x-etag on each object`,
      { code: im ? 'etag-mismatch' : 'etag-match' },
    );
}

/** POST or PATCH /v1/config: a multi-object body, one transaction. */
async function multiWrite(deps: AppDeps, c: Ctx): Promise<Response> {
  wholeTreeConditions(c);
  const q = parseQuery(searchParams(c), resourceQuery.multiWrite);
  const body = await readBody(c, deps.settings.maxBodyBytes);
  const changes = multiObjectChanges(body.docs, q.defaultOperation ?? 'replace');
  return txReply(deps, c, changes, modeOf(q), () => new Response(null, { status: 204 }));
}

/** Any method on /v1/config/<path>: OPTIONS, 405, then a read or a write of what it names. */
function configPath(deps: AppDeps, c: Ctx): Response | Promise<Response> {
  const r = resolvePath(pathAfter(c, PREFIX));
  if (!r) throw new ApiError('not-found', `No resource at ${c.req.path}`, { code: 'unknown-path', path: c.req.path });
  const allow = resourceAllow(PREFIX, r);
  const method = c.req.method;
  if (method === 'OPTIONS') return options(allow, allow.includes('PATCH'));
  if (!(allow as readonly string[]).includes(method) && method !== 'HEAD')
    throw methodNotAllowed(method, c.req.path, allow);
  if (r.def.needsUnsealed && deps.strongbox.sealed)
    throw new ApiError('sealed', `Cannot serve ${c.req.path}: the secret store is sealed (POST /v1/strongbox/unseal)`, {
      code: 'sealed',
    });
  const params = searchParams(c);
  if (method === 'GET' || method === 'HEAD')
    return r.kind === 'list' ? readList(c, deps, r, params) : readOne(c, deps, r, params);
  return writeObject(deps, c, r, method, params);
}

/** POST (create an entry), PUT, PATCH or DELETE of one object. */
async function writeObject(
  deps: AppDeps,
  c: Ctx,
  r: Resolved,
  method: string,
  params: URLSearchParams,
): Promise<Response> {
  const q = parseQuery(params, resourceQuery.write);
  const mode = modeOf(q);
  if (method === 'DELETE') {
    return txReply(
      deps,
      c,
      [{ path: r.path, op: 'delete', ...conditions(c) }],
      mode,
      () => new Response(null, { status: 204 }),
    );
  }
  const body = await readBody(c, deps.settings.maxBodyBytes);
  const doc = singleDoc(body.docs);
  if (method === 'POST') {
    await listConditions(deps, c, r);
    const value = objectBody(doc);
    if (typeof value.name !== 'string')
      throw value.name === undefined
        ? new ApiError(
            'invalid-value',
            `Missing required field name: POST to ${c.req.path} creates the entry it names`,
            {
              code: 'schema-required',
              path: 'name',
            },
          )
        : new ApiError('invalid-value', `Cannot use ${JSON.stringify(value.name)} as name: expected a string`, {
            code: 'schema-type',
            path: 'name',
          });
    const path = `${r.path}/${value.name}`;
    // `.` and `..` would be taken as dot-segments of the path (the list itself, its parent).
    if (value.name === '.' || value.name === '..' || !resolvePath(path))
      throw new ApiError('invalid-value', `Cannot use ${JSON.stringify(value.name)} as name`, {
        code: 'bad-name',
        path: 'name',
      });
    return txReply(
      deps,
      c,
      [{ path, op: 'create', value }],
      mode,
      (_created, etag) =>
        new Response(null, {
          status: 201,
          headers: { Location: `${PREFIX}/${path}`, ...(etag ? { ETag: etag } : {}) },
        }),
    );
  }
  if (method === 'PUT') {
    return txReply(
      deps,
      c,
      [{ path: r.path, op: 'replace', value: objectBody(doc), ...conditions(c) }],
      mode,
      (created, etag) =>
        new Response(null, {
          status: created ? 201 : 204,
          headers: { ...(created ? { Location: `${PREFIX}/${r.path}` } : {}), ...(etag ? { ETag: etag } : {}) },
        }),
    );
  }
  const change: Change = body.format.startsWith('json-patch')
    ? { path: r.path, op: 'update', jsonPatch: doc, ...conditions(c) }
    : { path: r.path, op: 'update', value: objectBody(doc), ...conditions(c) };
  return txReply(
    deps,
    c,
    [change],
    mode,
    (_created, etag) => new Response(null, { status: 204, headers: etag ? { ETag: etag } : {} }),
  );
}

function conditions(c: Ctx): Pick<Change, 'ifMatch' | 'ifNoneMatch'> {
  const out: Pick<Change, 'ifMatch' | 'ifNoneMatch'> = {};
  const im = header(c, 'if-match');
  const inm = header(c, 'if-none-match');
  if (im) out.ifMatch = im.trim();
  if (inm) out.ifNoneMatch = inm.trim();
  return out;
}

function singleDoc(docs: Json[]): Json {
  if (docs.length !== 1)
    throw new ApiError(
      'invalid-document',
      `Cannot use a body of ${docs.length} documents here: send exactly one object`,
      { code: 'document-count' },
    );
  return docs[0] as Json;
}

function objectBody(doc: Json): JsonObject {
  if (!isObject(doc))
    throw new ApiError('invalid-document', `Cannot use ${jsonKind(doc)} as the body: it must be one object`, {
      code: 'not-an-object',
    });
  for (const k of Object.keys(doc)) {
    if (k.startsWith('x-'))
      throw new ApiError(
        'invalid-value',
        `Cannot use field ${k} in a single-resource body: x- fields belong to /v1/config multi-object bodies`,
        { code: 'x-field', path: k },
      );
  }
  return doc;
}

/** Synchronous when the store has the object in memory (store.peek), as it mostly does. */
function readOne(c: Ctx, deps: AppDeps, r: Resolved, params: URLSearchParams): Response | Promise<Response> {
  const q = parseQuery(params, resourceQuery.configItem, { knownField: knownIn(r.def.schema) });
  const p = principalOf(c);
  deps.auth.authorize(p, r.xPath, 'read');
  const key = configKey(p.tenant, r.path);
  if (q.watch)
    return watchResponse(c, deps, {
      relevant: (keys) => keys.includes(key),
      runtimeState: false,
      read: async () => {
        const e = await deps.store.get(key);
        if (!e && r.kind === 'object') return [{ xPath: r.xPath, value: shape(r.def, {}, q) }];
        return e ? [{ xPath: r.xPath, value: shape(r.def, redact(r.def, e.value), q) }] : [];
      },
    });
  const peeked = deps.store.peek(key);
  return peeked === 'miss'
    ? deps.store.get(key).then((entry) => answerOne(c, r, q, entry))
    : answerOne(c, r, q, peeked);
}

function answerOne(c: Ctx, r: Resolved, q: ParsedQuery, entry: Entry | undefined): Response {
  if (!entry && r.kind === 'object') return neverWritten(c, r, q);
  if (!entry) throw new ApiError('not-found', `No object at ${r.xPath}`, { code: 'missing', 'x-path': r.xPath });
  const etag = entry.etag;
  const early = conditionalRead(c, r.xPath, etag);
  if (early) return early;
  return reply(c, 200, shape(r.def, redact(r.def, entry.value), q), { headers: { ETag: etag } });
}

/**
 * A singleton (system/settings) never written exists in effect: it reads as `{}` (its defaults
 * with `with-defaults`), without an ETag, so an If-Match (even `*`) cannot hold.
 */
function neverWritten(c: Ctx, r: Resolved, q: ParsedQuery): Response {
  if (header(c, 'if-match') !== undefined)
    throw new ApiError('precondition-failed', `Cannot read ${r.xPath}: it was never written, so it has no ETag`, {
      code: 'etag-mismatch',
    });
  return reply(c, 200, shape(r.def, {}, q));
}

async function readList(c: Ctx, deps: AppDeps, r: Resolved, params: URLSearchParams): Promise<Response> {
  const q = parseQuery(params, resourceQuery.configList, { knownField: knownIn(r.def.schema) });
  const p = principalOf(c);
  deps.auth.authorize(p, `${PREFIX}/${r.path}`, 'read');
  const base = configKey(p.tenant, r.path);
  const prefix = base + '/';
  // A member the caller's policies deny reading is left out, as in a read of the whole tree.
  const readable = (e: Entry) => deps.auth.allows(p, `${PREFIX}/${e.key.slice(p.tenant.length + 1)}`, 'read');
  const members = async () => {
    const { entries } = directMembers(await deps.store.list(base), base);
    const values = entries.filter(readable).map((e) => ({ key: e.key, value: redact(r.def, e.value), entry: e }));
    const where = q.where;
    return where ? values.filter((v) => where.test(v.value)) : values;
  };
  const listed = async () => (await members()).map(({ key, value }) => ({ key, value }));
  if (q.watch) {
    noWatchWith(q);
    return watchResponse(c, deps, {
      relevant: (keys) => keys.some((k) => k.startsWith(prefix)),
      runtimeState: false,
      read: async () =>
        (await listed()).map((v) => ({
          xPath: `${PREFIX}/${v.key.slice(p.tenant.length + 1)}`,
          value: shape(r.def, v.value, q),
        })),
    });
  }
  if (q.validate) {
    noValidateWith(q);
    return reply(
      c,
      200,
      await validateList(
        deps,
        r,
        p.tenant,
        (await members()).map((m) => m.entry),
      ),
    );
  }
  // The list's ETag: of its members' keys and ETags, so it changes exactly when one is added,
  // removed or changed. Conditions in RFC 9110's order (If-Match first).
  if (q.count && !q.where) {
    // Nothing to read in the members: their number and the list's ETag (kept per list, list-members.ts).
    const all = directMembers(await deps.store.list(base), base);
    return (
      conditionalRead(c, `${PREFIX}/${r.path}`, all.etag) ??
      reply(c, 200, { count: all.entries.filter(readable).length }, { headers: { ETag: all.etag } })
    );
  }
  const found = await members();
  const etag = q.where ? listEtagOf(found.map((m) => m.entry)) : directMembers(await deps.store.list(base), base).etag;
  const early = conditionalRead(c, `${PREFIX}/${r.path}`, etag);
  if (early) return early;
  const values = found.map((v) => v.value);
  const headers = { ETag: etag };
  return listReply(c, values, q, (v) => shape(r.def, v, q), headers);
}

/**
 * If-Match, then If-None-Match, as RFC 9110 13.2.2 orders them for a GET: a failed If-Match is
 * 412 whatever If-None-Match says; a matching If-None-Match is 304. Undefined: answer the read.
 */
function conditionalRead(c: Ctx, xPath: string, etag: string): Response | undefined {
  const im = header(c, 'if-match');
  if (im && !listsEtag(im, etag))
    throw new ApiError('precondition-failed', `Cannot read ${xPath}: its ETag is ${etag}, not ${im}`, {
      code: 'etag-mismatch',
    });
  const inm = header(c, 'if-none-match');
  if (inm && listsEtagWeakly(inm, etag)) return new Response(null, { status: 304, headers: { ETag: etag } });
  return undefined;
}

/** validate answers about the stored objects: keys, count and watch answer something else. */
function noValidateWith(q: ParsedQuery): void {
  const other = q.keys ? 'keys' : q.count ? 'count' : q.watch ? 'watch' : undefined;
  if (other)
    throw new ApiError('invalid-query', `Cannot use validate with ${other}: validate answers {valid, problems}`, {
      code: 'conflicting-parameters',
      parameter: 'validate',
    });
}

/**
 * `validate` on a list GET (CONTRACT §5): every stored object of the list checked against
 * today's schemas and checks, as a write of it would be; `{valid, problems: [{x-path,
 * error-message, error-info, error-details}]}`.
 */
async function validateList(deps: AppDeps, r: Resolved, tenant: string, entries: Entry[]): Promise<JsonObject> {
  const problems: Json[] = [];
  for (const e of entries) {
    const path = e.key.slice(tenant.length + 1);
    const item = resolvePath(path);
    if (!item || item.kind === 'list') continue;
    const xPath = `${PREFIX}/${path}`;
    const value = r.def.fromStored ? r.def.fromStored(e.value, { strongbox: deps.strongbox, key: e.key }) : e.value;
    const wctx = { tenant, rootTenant: deps.settings.tenant, key: e.key };
    const errors = [
      ...objectProblems(item.def, value, xPath, wctx).errors,
      ...(await tenantChecks(deps.auth.tenants, deps.settings.tenant, tenant, item, undefined, value)),
    ];
    for (const err of errors) {
      const { 'error-details': details, ...entry } = err.toEntry();
      const { 'x-path': _xPath, ...rest } = details ?? {};
      problems.push({
        'x-path': xPath,
        ...entry,
        ...(Object.keys(rest).length ? { 'error-details': rest } : {}),
      } as Json);
    }
  }
  return { valid: problems.length === 0, problems };
}

/** keys and count answer one value, not objects: there is nothing to stream. */
export function noWatchWith(q: ParsedQuery): void {
  const other = q.keys ? 'keys' : q.count ? 'count' : undefined;
  if (other)
    throw new ApiError('invalid-query', `Cannot use watch with ${other}: a watch streams objects`, {
      code: 'conflicting-parameters',
      parameter: 'watch',
    });
}

async function readAll(c: Ctx, deps: AppDeps): Promise<Response> {
  const q = parseQuery(searchParams(c), resourceQuery.configAll);
  if (q.matchPath) checkRoot(q.matchPath, PREFIX);
  const p = principalOf(c);
  const tenants = q.includeTenantConfig
    ? [...p.tenants].sort((a, b) => (a === p.tenant ? -1 : b === p.tenant ? 1 : a.localeCompare(b)))
    : [p.tenant];
  const objects = async (): Promise<WatchedObject[]> => {
    const out: WatchedObject[] = [];
    for (const tenant of tenants) {
      for (const e of await deps.store.list(tenant)) {
        const path = e.key.slice(tenant.length + 1);
        const xPath = `${PREFIX}/${path}`;
        const r = resolvePath(path);
        if (!r || r.kind === 'list') continue;
        if (q.matchPath && !q.matchPath(xPath)) continue;
        if (!deps.auth.allows(p, xPath, 'read', tenant)) continue;
        if (r.def.needsUnsealed && deps.strongbox.sealed) {
          // match-path names what it wants: answered as the list would be (503), not left out.
          if (q.matchPath)
            throw new ApiError(
              'sealed',
              `Cannot serve ${xPath} (match-path): the secret store is sealed (POST /v1/strongbox/unseal)`,
              { code: 'sealed', 'x-path': xPath },
            );
          if (!r.def.listedWhileSealed) continue;
        }
        const value = redact(r.def, e.value);
        if (q.where && !q.where.test(value)) continue;
        const shaped = shape(r.def, value, q);
        const head: JsonObject = {};
        if (tenant !== p.tenant) head['x-tenant'] = tenant;
        if (q.sendEtag) head['x-etag'] = e.etag;
        out.push({ xPath, value: isObject(shaped) ? { ...head, ...shaped } : { ...head, value: shaped } });
      }
    }
    return out;
  };
  const early = noEtagConditions(c, PREFIX);
  if (early) return early;
  if (q.watch)
    return watchResponse(c, deps, {
      relevant: (keys) => keys.some((k) => tenants.some((t) => k.startsWith(t + '/'))),
      runtimeState: false,
      read: objects,
    });
  const out: Json[] = (await objects()).map((o) => ({ 'x-path': o.xPath, ...(o.value as JsonObject) }));
  return reply(c, 200, out, { multi: true });
}
