/**
 * The configuration history and undo (CONTRACT §11), over the store's history (store/history.ts):
 *
 *   GET  /v1/state/config-revisions              newest first: [{revision, time, user, tenant,
 *                                                changes: [{x-path, x-operation}]}]
 *   GET  /v1/state/config-revisions/<revision>   the same, each change with `before` and
 *                                                `after` (secret values and password hashes
 *                                                redacted, as every configuration read)
 *   POST /v1/config/rollback {"to": <revision>}  every object changed after that revision back
 *                                                to its content at it, as one transaction
 *                                                (dry-run, validate) → 200 {revision}
 *
 * A reader sees the tenant view: the changes of objects in its own tenant that its policies let
 * it read; a revision without any is not listed. `count`, `where` and `fields` apply to the list.
 *
 * Rollback: an object's content at revision R is its `before` in the first revision after R that
 * changed it (absent: it did not exist, so it is removed). The restore runs through the ordinary
 * write path (checks, policies, one commit) as a `replace` or `remove` per object, so it is a new
 * revision itself and can be undone the same way. It answers 409 `changed-by-other-tenant` when
 * one of those objects was last changed from a tenant the caller cannot write (a parent tenant's
 * administrator deleted it), and 404 `unknown-revision` for a revision the history does not hold.
 */
import { Hono } from 'hono';
import { ApiError } from '../lib/errors.js';
import { isObject, type Json, type JsonObject } from '../lib/json.js';
import type { StoredRevision } from '../store/store.js';
import { resolvePath } from '../model/resources.js';
import { runTransaction, type Change, type TxMode } from '../model/transaction.js';
import type { AppDeps, AppEnv } from './deps.js';
import { principalOf, readBody, reply, searchParams } from './http.js';
import { revisionSchema, routes } from './route-table.js';
import { allowRoutes, on } from './routing.js';
import { parseQuery } from '../query/params.js';
import { knownIn, redact, shape } from './present.js';
import { configTxContext } from './config.js';

const listPath = '/v1/state/config-revisions';
/** The most revisions a list read walks (newest first). */
export const maxListed = 10_000;

type Principal = ReturnType<typeof principalOf>;

type ViewChange = { key: string; path: string; xPath: string; before?: JsonObject; after?: JsonObject };

/** The changes of `rev` the reader sees: objects of its tenant that it may read. */
function visibleChanges(deps: AppDeps, p: Principal, rev: StoredRevision): ViewChange[] {
  const prefix = p.tenant + '/';
  const out: ViewChange[] = [];
  for (const c of rev.changes) {
    if (!c.key.startsWith(prefix)) continue;
    const path = c.key.slice(prefix.length);
    const xPath = `/v1/config/${path}`;
    if (!deps.auth.allows(p, xPath, 'read')) continue;
    out.push({
      key: c.key,
      path,
      xPath,
      ...(c.before ? { before: c.before } : {}),
      ...(c.after ? { after: c.after } : {}),
    });
  }
  return out;
}

/** The members of a revision in the list, for `fields` (an unknown name is 400 unknown-field). */
const summarySchema = revisionSchema(false);

const operationOf = (c: ViewChange) => (!c.before ? 'create' : !c.after ? 'delete' : 'replace');

function summary(rev: StoredRevision, changes: ViewChange[]): JsonObject {
  return {
    revision: rev.revision,
    time: rev.time,
    user: rev.user,
    tenant: rev.tenant,
    changes: changes.map((c) => ({ 'x-path': c.xPath, 'x-operation': operationOf(c) })),
  };
}

/** An object's stored form as reads show it: secrets and password hashes redacted. */
function shown(path: string, value: JsonObject | undefined): Json | undefined {
  if (!value) return undefined;
  const def = resolvePath(path)?.def;
  return def ? redact(def, value) : value;
}

/** `path` is what error-details name: the URL path for a revision in it, else the body field. */
function parseRevision(raw: unknown, where: string, path: string): number {
  const n = typeof raw === 'number' ? raw : typeof raw === 'string' && /^\d{1,15}$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(n) || n < 0)
    throw new ApiError(
      'bad-request',
      `Cannot use ${JSON.stringify(raw)} as a revision in ${where}: give a revision number from GET ${listPath}`,
      {
        code: 'bad-value',
        path,
      },
    );
  return n;
}

export function revisionRoutes(deps: AppDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  on(app, routes.configRevisions, async (c) => {
    const q = parseQuery(searchParams(c), routes.configRevisions.query, { knownField: knownIn(summarySchema) });
    const p = principalOf(c);
    deps.auth.authorize(p, listPath, 'read');
    const out: JsonObject[] = [];
    for (const rev of await deps.store.history({ limit: maxListed })) {
      const changes = visibleChanges(deps, p, rev);
      if (changes.length === 0) continue;
      const s = summary(rev, changes);
      if (!q.where || q.where.test(s)) out.push(s);
    }
    if (q.count) return reply(c, 200, { count: out.length });
    return reply(
      c,
      200,
      out.map((s) => shape(undefined, s, q)),
      { multi: true },
    );
  });

  on(app, routes.configRevision, async (c) => {
    parseQuery(searchParams(c), routes.configRevision.query);
    const p = principalOf(c);
    deps.auth.authorize(p, c.req.path, 'read');
    const n = parseRevision(c.req.param('revision'), `the path ${c.req.path}`, c.req.path);
    const rev = (await deps.store.history({ upTo: n, limit: 1 }))[0];
    const changes = rev && rev.revision === n ? visibleChanges(deps, p, rev) : [];
    if (!rev || rev.revision !== n || changes.length === 0)
      throw new ApiError(
        'not-found',
        `No revision ${n} in the configuration history you can read (GET ${listPath} lists them)`,
        {
          code: 'unknown-revision',
        },
      );
    const s = summary(rev, changes);
    s.changes = changes.map((ch) => {
      const o: JsonObject = { 'x-path': ch.xPath, 'x-operation': operationOf(ch) };
      const before = shown(ch.path, ch.before);
      const after = shown(ch.path, ch.after);
      if (before !== undefined) o.before = before;
      if (after !== undefined) o.after = after;
      return o;
    });
    return reply(c, 200, s);
  });

  on(app, routes.rollback, async (c) => {
    const q = parseQuery(searchParams(c), routes.rollback.query);
    if (q.dryRun && q.validate)
      throw new ApiError('invalid-query', 'Cannot use dry-run and validate together: choose one', {
        code: 'conflicting-parameters',
        parameter: 'dry-run',
      });
    const mode: TxMode = q.dryRun ? 'dry-run' : q.validate ? 'validate' : 'commit';
    const p = principalOf(c);
    const body = await readBody(c, deps.settings.maxBodyBytes);
    const doc = body.docs[0];
    if (body.docs.length !== 1 || !isObject(doc) || !('to' in doc))
      throw new ApiError('bad-request', 'Cannot roll back: the body must be one object {"to": <revision>}', {
        code: 'missing-body',
      });
    for (const k of Object.keys(doc))
      if (k !== 'to')
        throw new ApiError('bad-request', `Cannot roll back: unknown member ${k} (the body is {"to": <revision>})`, {
          code: 'unknown-field',
          path: k,
        });
    const to = parseRevision(doc.to, 'field to', 'to');
    // A rollback is built from the history: who may not read it may not use it (nor learn from
    // its answers which revisions exist or which objects they changed).
    deps.auth.authorize(p, listPath, 'read');
    const changes = await restoreChanges(deps, p, to);
    const ctx = configTxContext(deps, c);
    if (changes.length === 0) {
      if (mode === 'validate') return new Response(null, { status: 204 });
      if (mode === 'dry-run') return reply(c, 200, { 'impacted-resources': [] });
      return reply(c, 200, { revision: await deps.store.revision() });
    }
    const result = await runTransaction(ctx, changes, mode);
    if (mode === 'validate') return new Response(null, { status: 204 });
    if (mode === 'dry-run') return reply(c, 200, { 'impacted-resources': result.impacted ?? [] });
    return reply(c, 200, { revision: result.revision ?? (await deps.store.revision()) });
  });

  allowRoutes(app);
  return app;
}

/** The changes that put every object of the caller's tenant changed after `to` back as it was at `to`. */
async function restoreChanges(deps: AppDeps, p: Principal, to: number): Promise<Change[]> {
  const newest = await deps.store.history({ limit: maxListed });
  const oldest = newest[newest.length - 1];
  if (!oldest || oldest.revision > to || to > newest[0]!.revision)
    throw new ApiError(
      'not-found',
      `Cannot roll back to revision ${to}: the configuration history does not hold it (GET ${listPath} lists what it holds)`,
      {
        code: 'unknown-revision',
      },
    );
  // Oldest first after `to`: the first change of an object holds its content at `to`.
  const at = new Map<string, { change: ViewChange; last: StoredRevision }>();
  for (const rev of newest.filter((r) => r.revision > to).reverse()) {
    for (const ch of rev.changes) {
      if (!ch.key.startsWith(p.tenant + '/')) continue;
      const path = ch.key.slice(p.tenant.length + 1);
      const first = at.get(ch.key);
      const change: ViewChange = first?.change ?? {
        key: ch.key,
        path,
        xPath: `/v1/config/${path}`,
        ...(ch.before ? { before: ch.before } : {}),
      };
      at.set(ch.key, { change, last: rev });
    }
  }
  // Objects the caller may not read are not named (their paths would be in the errors of the
  // write): the whole rollback is refused, with their number only.
  const hidden = [...at.values()].filter(({ change }) => !deps.auth.allows(p, change.xPath, 'read')).length;
  if (hidden > 0)
    throw new ApiError(
      'forbidden',
      `Cannot roll back to revision ${to}: it would change ${hidden} object${hidden === 1 ? '' : 's'} your policies do not let you read`,
      { code: 'forbidden' },
    );
  const restores: Change[] = [];
  const removes: Change[] = [];
  for (const { change, last } of at.values()) {
    if (!p.tenants.has(last.tenant))
      throw new ApiError(
        'conflict',
        `Cannot roll back ${change.xPath}: it was last changed (revision ${last.revision}, by ${last.user}) from tenant ${last.tenant}, which you cannot write`,
        { code: 'changed-by-other-tenant', 'x-path': change.xPath },
      );
    const r = resolvePath(change.path);
    if (!r) continue;
    if (change.before) {
      const value = r.def.fromStored
        ? r.def.fromStored(change.before, { strongbox: deps.strongbox, key: change.key })
        : change.before;
      restores.push({ path: change.path, op: 'replace', value: { ...value } });
    } else removes.push({ path: change.path, op: 'remove' });
  }
  // Parents before children when restoring (a vault before its secrets), children first when removing.
  restores.sort((a, b) => a.path.split('/').length - b.path.split('/').length);
  removes.sort((a, b) => b.path.split('/').length - a.path.split('/').length);
  return [...restores, ...removes];
}
