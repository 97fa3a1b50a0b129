/**
 * /v1/state: operational state = the applied configuration (applied as soon as it is
 * committed) plus system fields: exporter status and counters, the sites a deployment
 * selects, the default DNS zone, topics of the bus.
 */
import { checkRoot } from '../query/matchpath.js';
import { Hono } from 'hono';
import { ApiError } from '../lib/errors.js';
import { isObject, type Json, type JsonObject } from '../lib/json.js';
import { configKey, webhookStateKey } from '../store/keys.js';
import { resolvePath, resources, type ResourceDef, type Resolved } from '../model/resources.js';
import type { StateContext, StateItem } from '../resources/module.js';
import { type ParsedQuery, parseQuery, refuseDryRun } from '../query/params.js';
import type { AppDeps, AppEnv } from './deps.js';
import {
  noEtagConditions,
  checkSite,
  listReply,
  methodNotAllowed,
  noBody,
  options,
  principalOf,
  reply,
  pathAfter,
  searchParams,
  type Ctx,
} from './http.js';
import type { Principal } from '../auth/index.js';
import { resourceQuery, routes } from './route-table.js';
import { allowRoutes, on, resourceAllow } from './routing.js';
import { knownInState, redact, shape } from './present.js';
import { topicRoutes, topicStateObjects } from './topics.js';
import { noWatchWith } from './config.js';
import { watchResponse, type WatchedObject } from './watch.js';
import { webhook } from '../resources/webhook/index.js';

const PREFIX = routes.stateAll.path;

type Item = StateItem;

/**
 * Where the state routes take their objects from: this process (its store, runtime and bus),
 * or an edge site's last report (the control plane answering `site=` for a site that is not
 * connected; fleet/control/relay.ts carries the live reads).
 */
export type StateSource = {
  /** The state objects of one list, item or singleton of `tenant`. */
  items(tenant: string, r: Resolved, cache: Map<string, Entry[]>): Promise<Item[]>;
  /** The list and singleton paths holding objects of `tenant` (what `GET /v1/state` walks). */
  paths(tenant: string): Promise<Set<string>>;
  /** The tenant's topics as state objects; undefined: not known here (a report holds none). */
  topics: ((tenant: string) => Promise<Array<{ path: string; value: JsonObject }>>) | undefined;
};

/** One state object as a site reports it: its path, value and which of its fields are configuration. */
export type ReportedItem = { path: string; value: JsonObject; config: string[] };

/** What the resources' state hooks read: this site's exporters, the fleet, the tenant's sites. */
function stateContext(deps: AppDeps, tenant: string, cache: Map<string, Entry[]>, own: boolean): StateContext {
  const fleetView = own ? undefined : deps.fleet?.exporterView;
  const exporterState = async (name: string): Promise<JsonObject | undefined> => {
    const local = await siteExporterState(deps, tenant, name);
    return fleetView ? await fleetView(tenant, name, local) : local;
  };
  return {
    tenant,
    site: deps.settings.site,
    getConfig: async (path) => (await deps.store.get(configKey(tenant, path)))?.value,
    exporterState,
    // Fleet hook: at a control plane, a site's link to it (connection, last-seen, config-version, in-sync).
    siteLink: async (name) => (tenant === deps.settings.tenant ? await deps.fleet?.siteState(name) : undefined),
    listConfig: async (path) => (await listCached(deps, configKey(tenant, path), cache)).map((e) => e.value),
  };
}

/** The running state of exporter `tenant/name` at this site: live in this process, else as this site stored it. */
async function siteExporterState(deps: AppDeps, tenant: string, name: string): Promise<JsonObject | undefined> {
  const live = deps.runtime?.exporterState(tenant, name);
  if (live) return live;
  const stored = await deps.store.kvGet(webhookStateKey(tenant, name, deps.settings.site));
  if (stored) {
    try {
      const v = JSON.parse(stored) as unknown;
      if (isObject(v)) return v;
    } catch {
      /* fall through */
    }
  }
  return undefined;
}

type Entry = { key: string; value: JsonObject };

/** The configuration as configured, then the runtime fields whose names it does not use. */
function withoutOverride(config: JsonObject, runtime: JsonObject): JsonObject {
  const out: JsonObject = { ...config };
  for (const [k, v] of Object.entries(runtime)) if (!(k in config)) out[k] = v;
  return out;
}

async function listCached(deps: AppDeps, prefix: string, cache: Map<string, Entry[]>): Promise<Entry[]> {
  let hit = cache.get(prefix);
  if (!hit) {
    hit = await deps.store.list(prefix);
    cache.set(prefix, hit);
  }
  return hit;
}

function contentFilter(item: Item, q: ParsedQuery): JsonObject {
  const content = q.content ?? 'all';
  if (content === 'all') return item.value;
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(item.value)) {
    const isConfig = item.config.has(k);
    if (k === 'name' || (content === 'config') === isConfig) out[k] = v;
  }
  return out;
}

/** Every state object of one list (or one object), in stored order. */
async function stateItems(
  deps: AppDeps,
  tenant: string,
  r: Resolved,
  cache: Map<string, Entry[]>,
  own = false,
): Promise<Item[]> {
  const base = configKey(tenant, r.listPath);
  const entries =
    r.kind === 'list'
      ? (await listCached(deps, base, cache)).filter(
          (e) => e.key.startsWith(base + '/') && !e.key.slice(base.length + 1).includes('/'),
        )
      : await (async () => {
          const e = await deps.store.get(configKey(tenant, r.path));
          return e ? [e] : [];
        })();
  const ctx = stateContext(deps, tenant, cache, own);
  const items: Item[] = [];
  const rollout = own ? undefined : deps.fleet?.rolloutState;
  for (const e of entries) {
    let value = redact(r.def, e.value);
    // A staged rollout's progress joins its spec (CONTRACT §11).
    const progress = rollout && isObject(value.rollout) ? await rollout(e.key) : undefined;
    if (progress && isObject(value.rollout)) value = { ...value, rollout: { ...value.rollout, ...progress } };
    const derived = r.def.derivedState ? await r.def.derivedState(value, ctx) : {};
    items.push({
      path: e.key.slice(tenant.length + 1),
      value: withoutOverride(value, derived),
      config: new Set(Object.keys(value)),
    });
  }
  return r.def.stateItems ? await r.def.stateItems(items, r, ctx) : items;
}

/** The list and singleton paths of `tenant` in this process's store, plus those of resources that exist in effect. */
async function storedPaths(deps: AppDeps, tenant: string): Promise<Set<string>> {
  const lists = new Set<string>();
  for (const e of await deps.store.list(tenant)) {
    const r = resolvePath(e.key.slice(tenant.length + 1));
    if (r && r.kind !== 'list') lists.add(r.kind === 'item' ? r.listPath : r.path);
  }
  // Resources with objects that exist in effect (the default DNS zone, the settings) are read even when none is stored.
  for (const d of resources) if (d.stateItems && !d.parent) lists.add(d.segments.join('/'));
  return lists;
}

/**
 * This process's state. At a control plane an exporter placed on other sites is shown as the
 * fleet runs it (fleet/control/exporter-view.ts); `own` shows this site's own view instead (`site=<it>`).
 */
export function localSource(deps: AppDeps, opts: { own?: boolean } = {}): StateSource {
  return {
    items: (tenant, r, cache) => stateItems(deps, tenant, r, cache, opts.own === true),
    paths: (tenant) => storedPaths(deps, tenant),
    topics: (tenant) => topicStateObjects(deps, tenant),
  };
}

/**
 * What an edge site reports of one tenant: every state object `GET /v1/state` would show an
 * administrator, except secrets (a secret value never travels up) and topics (their last entry
 * is live data; a live `site=` read shows them).
 */
export async function stateReport(deps: AppDeps, tenant: string): Promise<ReportedItem[]> {
  const cache = new Map<string, Entry[]>();
  const out: ReportedItem[] = [];
  for (const listPath of [...(await storedPaths(deps, tenant))].sort()) {
    const r = resolvePath(listPath);
    if (!r || r.def.itemState || (r.def.needsUnsealed && deps.strongbox.sealed && !r.def.listedWhileSealed)) continue;
    for (const i of await stateItems(deps, tenant, r, cache, true))
      out.push({ path: i.path, value: i.value, config: [...i.config] });
  }
  return out;
}

/** The state objects of one tenant as its site last reported them (see `stateReport`). */
export function reportSource(reported: readonly ReportedItem[]): StateSource {
  const where = reported.map((i) => resolvePath(i.path));
  // Redacted again here: what a site sends is shown as the site's, never a secret or a password hash.
  const items = reported.map((i, n) => {
    const def = where[n]?.def;
    return { path: i.path, value: def ? redact(def, i.value) : i.value, config: new Set(i.config) };
  });
  return {
    async items(_tenant, r) {
      return items.filter((i, n) => {
        const at = where[n];
        return r.kind === 'list' ? at?.kind === 'item' && at.listPath === r.listPath : i.path === r.path;
      });
    },
    async paths() {
      const out = new Set<string>();
      for (const at of where) if (at && at.kind !== 'list') out.add(at.kind === 'item' ? at.listPath : at.path);
      return out;
    },
    topics: undefined,
  };
}

/** The source a read takes its objects from, by its `site=`. */
type SourceOf = (site: string | undefined) => StateSource;

/** The state routes over `source` (this process's own state unless told otherwise). */
export function stateRoutes(deps: AppDeps, given?: StateSource): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const fleetSource = given ?? localSource(deps);
  // `site=<this site>` at a control plane: this site's own view, not the fleet's.
  const ownSource = given ?? localSource(deps, { own: true });
  const pick: SourceOf = (site) => (site === undefined ? fleetSource : ownSource);
  if (fleetSource.topics) app.route('/', topicRoutes(deps));

  on(app, routes.restart, (c) => restartExporter(deps, c, c.req.param('name')));
  on(app, routes.stateAll, (c) => readAllState(deps, c, pick));
  // OPTIONS and 405 on the operation path (not 404) and on /v1/state.
  allowRoutes(app);
  app.all(`${PREFIX}/*`, (c) => readState(deps, c, pick));
  return app;
}

/** POST …/webhooks/<name>/restart: the exporter re-reads its configuration and secrets. */
async function restartExporter(deps: AppDeps, c: Ctx, name: string): Promise<Response> {
  const p = principalOf(c);
  refuseDryRun(searchParams(c), c.req.path);
  parseQuery(searchParams(c), routes.restart.query);
  deps.auth.authorize(p, c.req.path, 'execute');
  await noBody(c, 'restart');
  if (deps.strongbox.sealed)
    throw new ApiError('sealed', 'Cannot restart an exporter: the secret store is sealed', { code: 'sealed' });
  if (!(await deps.store.get(webhook.keyOf(p.tenant, name))))
    throw new ApiError('not-found', `No webhook exporter ${name}`, {
      code: 'missing',
      'x-path': `/v1/config/${webhook.pathOf(name)}`,
    });
  if (!deps.runtime || !(await deps.runtime.restart(p.tenant, name)))
    throw new ApiError(
      'not-found',
      `Webhook exporter ${name} does not run in this process (site ${deps.settings.site}): its site-placement names other sites, or this process runs no exporters; restart it where it runs`,
      { code: 'not-running' },
    );
  return new Response(null, { status: 204 });
}

/** GET /v1/state: every state object of the caller's tenant it may read. */
async function readAllState(deps: AppDeps, c: Ctx, pick: SourceOf): Promise<Response> {
  const q = parseQuery(searchParams(c), resourceQuery.stateAll);
  if (q.matchPath) checkRoot(q.matchPath, PREFIX);
  checkSite(deps, q.site);
  const p = principalOf(c);
  const source = pick(q.site);
  const objects = () => allStateObjects(deps, p, source, q);
  const early = noEtagConditions(c, PREFIX);
  if (early) return early;
  if (q.watch) return watchResponse(c, deps, stateWatch(p.tenant, objects));
  const out: Json[] = (await objects()).map((o): Json =>
    isObject(o.value) ? { 'x-path': o.xPath, ...o.value } : { 'x-path': o.xPath, value: o.value },
  );
  return reply(c, 200, out, { multi: true });
}

/** The objects of GET /v1/state: each list and singleton of the tenant, then its topics. */
async function allStateObjects(
  deps: AppDeps,
  p: Principal,
  source: StateSource,
  q: ParsedQuery,
): Promise<WatchedObject[]> {
  const cache = new Map<string, Entry[]>();
  const out: WatchedObject[] = [];
  const seen = new Set<string>();
  const lists = await source.paths(p.tenant);
  const addItem = (item: Item, def: ResourceDef | undefined) => {
    const xPath = `${PREFIX}/${item.path}`;
    if (seen.has(xPath) || (q.matchPath && !q.matchPath(xPath)) || !deps.auth.allows(p, xPath, 'read')) return;
    seen.add(xPath);
    const value = contentFilter(item, q);
    if (q.where && !q.where.test(value)) return;
    out.push({ xPath, value: shape(def, value, q) });
  };
  for (const listPath of [...lists].sort()) {
    const r = resolvePath(listPath);
    // While sealed, exporters are shown (in status error when they need a secret), secrets not.
    if (!r || (r.def.needsUnsealed && deps.strongbox.sealed && !r.def.listedWhileSealed)) continue;
    for (const item of await source.items(p.tenant, r, cache)) addItem(item, r.def);
  }
  for (const item of (await source.topics?.(p.tenant)) ?? [])
    addItem({ path: item.path, value: item.value, config: new Set() }, undefined);
  return out;
}

/** GET /v1/state/<path>: a list, an item or a singleton. */
async function readState(deps: AppDeps, c: Ctx, pick: SourceOf): Promise<Response> {
  const r = resolvePath(pathAfter(c, PREFIX));
  if (!r) throw new ApiError('not-found', `No resource at ${c.req.path}`, { code: 'unknown-path', path: c.req.path });
  const allow = resourceAllow(PREFIX, r);
  if (c.req.method === 'OPTIONS') return options(allow, false);
  if (c.req.method !== 'GET' && c.req.method !== 'HEAD') throw methodNotAllowed(c.req.method, c.req.path, allow);
  if (r.def.needsUnsealed && deps.strongbox.sealed)
    throw new ApiError('sealed', `Cannot serve ${c.req.path}: the secret store is sealed (POST /v1/strongbox/unseal)`, {
      code: 'sealed',
    });
  const p = principalOf(c);
  deps.auth.authorize(p, c.req.path, 'read');
  return r.kind === 'list' ? readStateList(deps, c, pick, r, p) : readStateItem(deps, c, pick, r, p);
}

async function readStateList(deps: AppDeps, c: Ctx, pick: SourceOf, r: Resolved, p: Principal): Promise<Response> {
  const q = parseQuery(searchParams(c), resourceQuery.stateList, { knownField: knownInState(r.def) });
  checkSite(deps, q.site);
  const source = pick(q.site);
  const listed = async (): Promise<Item[]> => {
    // A member the caller's policies deny reading is left out, as in a read of the whole tree.
    let items = (await source.items(p.tenant, r, new Map()))
      .filter((i) => deps.auth.allows(p, `${PREFIX}/${i.path}`, 'read'))
      .map((i) => ({ ...i, value: contentFilter(i, q) }));
    if (q.where) {
      const w = q.where;
      items = items.filter((i) => w.test(i.value));
    }
    return items;
  };
  const early = noEtagConditions(c, c.req.path);
  if (early) return early;
  if (q.watch) {
    noWatchWith(q);
    return watchResponse(
      c,
      deps,
      stateWatch(p.tenant, async () =>
        (await listed()).map((i) => ({ xPath: `${PREFIX}/${i.path}`, value: shape(r.def, i.value, q) })),
      ),
    );
  }
  const items = (await listed()).map((i) => i.value);
  return listReply(c, items, q, (v) => shape(r.def, v, q));
}

async function readStateItem(deps: AppDeps, c: Ctx, pick: SourceOf, r: Resolved, p: Principal): Promise<Response> {
  const cache = new Map<string, Entry[]>();
  const q = parseQuery(searchParams(c), resourceQuery.stateItem, { knownField: knownInState(r.def) });
  checkSite(deps, q.site);
  const source = pick(q.site);
  const one = async (): Promise<JsonObject | undefined> => {
    // A secret in clear only from this process's own store (a site never reports one).
    if (r.def.itemState && source.topics) return await itemState(deps, p.tenant, r);
    const item = (await source.items(p.tenant, r, cache)).find((i) => i.path === r.path);
    if (!item) throw new ApiError('not-found', `No object at ${c.req.path}`, { code: 'missing', 'x-path': c.req.path });
    const value = contentFilter(item, q);
    if (q.where && !q.where.test(value))
      throw new ApiError('not-found', `The object at ${c.req.path} does not match where`, { code: 'no-match' });
    return value;
  };
  if (q.watch)
    return watchResponse(
      c,
      deps,
      stateWatch(p.tenant, async () => {
        cache.clear();
        try {
          const v = await one();
          return v ? [{ xPath: c.req.path, value: r.def.itemState ? v : shape(r.def, v, q) }] : [];
        } catch (err) {
          if (err instanceof ApiError && err.status === 404) return [];
          throw err;
        }
      }),
    );
  const value = await one();
  const early = noEtagConditions(c, c.req.path);
  if (early) return early;
  // A secret in clear is never kept by a cache on the way (as token replies).
  if (r.def.itemState) return reply(c, 200, value as JsonObject, { headers: { 'cache-control': 'no-store' } });
  return reply(c, 200, shape(r.def, value as JsonObject, q));
}

/** A state read changes with any configuration of the tenant and with the exporters' states. */
function stateWatch(tenant: string, read: () => Promise<WatchedObject[]>) {
  const prefix = tenant + '/';
  return { relevant: (keys: readonly string[]) => keys.some((k) => k.startsWith(prefix)), runtimeState: true, read };
}

/** One item's own state form (a secret in clear, {name, dict}) for a caller whose policies allow reading its state path. */
async function itemState(deps: AppDeps, tenant: string, r: Resolved): Promise<JsonObject> {
  const key = configKey(tenant, r.path);
  const entry = await deps.store.get(key);
  if (!entry) throw new ApiError('not-found', `No ${r.def.id} at ${PREFIX}/${r.path}`, { code: 'missing' });
  return r.def.itemState?.(entry.value, { strongbox: deps.strongbox, key, name: r.name ?? '' }) ?? entry.value;
}
