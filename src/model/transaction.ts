/**
 * The one write path: a list of changes (one for a single-resource request, many for
 * PATCH/POST /v1/config) applied all or nothing.
 *
 * 1. Each change is resolved and checked alone (path, op, body).
 * 2. The current objects are read; the changes are applied in body order to a working copy, so
 *    a later change sees the earlier ones (create then update of one path works; two full
 *    writes of one path are refused as conflicting).
 * 3. Every resulting object is validated (schema + semantic checks); every problem is reported.
 * 4. dry-run / validate stop here. Otherwise the writes go to the store in ONE commit whose
 *    expectations are the ETags read in step 2: if another writer got in between, the whole
 *    transaction is re-run on fresh data (optimistic concurrency, no lost update), while a
 *    client's own x-etag / If-Match is checked against the data each run read.
 */
import { ApiError, combine } from '../lib/errors.js';
import { isObject, deepEqual, type JsonObject } from '../lib/json.js';
import type { RevisionChange, WriteOp } from '../store/store.js';
import { configKey } from '../store/keys.js';
import { mergePatch } from './merge.js';
import { applyJsonPatch } from './jsonpatch.js';
import { childListsOf, listRulesOf, parentPathOf, resolvePath, type Resolved } from './resources.js';
import { duplicateKeyErrors, objectProblems } from './checks.js';
import { impactedResources, type Impacted } from './impact.js';
import { listsEtag, listsEtagWeakly } from '../store/etag.js';
import { guardWrites, loadSlots, toStored, type Slot } from './tx-slots.js';
import { canonicalOrder } from './canonical-order.js';
import { ops, type Change, type Op, type TxContext } from './tx-types.js';
import { authorizeChange } from './permissions.js';
import { tenantChecks } from './tenant-checks.js';
import { backoffDelay } from '../lib/backoff.js';

export { ops, type Change, type Op, type TxContext };

export type TxMode = 'commit' | 'dry-run' | 'validate';

export type TxResult = {
  /** Per change: whether it created the object. */
  created: boolean[];
  /** New ETags by path. */
  etags: Record<string, string>;
  impacted?: Impacted[];
  /** The store's revision after the commit (absent when nothing was written). */
  revision?: number;
};

const xPathOf = (path: string) => `/v1/config/${path}`;

function prefix(err: ApiError, xPath: string): ApiError {
  if (err.info?.['x-path']) return err;
  return err.rewrap(`${err.message} (${xPath})`, { 'x-path': xPath });
}

/** Static checks of one change: the path names one object, the body fits the op. */
function resolveChange(change: Change): Resolved {
  const xPath = xPathOf(change.path);
  const r = resolvePath(change.path);
  if (!r)
    throw new ApiError('not-found', `Cannot ${change.op} ${xPath}: no such resource`, {
      code: 'unknown-path',
      'x-path': xPath,
    });
  if (r.kind === 'list')
    throw new ApiError('bad-request', `Cannot ${change.op} ${xPath}: it is a list; address one entry by name`, {
      code: 'not-an-object',
      'x-path': xPath,
    });
  if (
    change.value !== undefined &&
    r.kind === 'item' &&
    change.value.name !== undefined &&
    change.value.name !== r.name
  ) {
    throw new ApiError(
      'bad-request',
      `Cannot use name ${JSON.stringify(change.value.name)} in the body of ${xPath}: it differs from the name in the path (${r.name})`,
      { code: 'name-mismatch', path: 'name', 'x-path': xPath },
    );
  }
  const needsValue =
    change.op === 'create' || change.op === 'replace' || (change.op === 'update' && change.jsonPatch === undefined);
  if (needsValue && change.value === undefined)
    throw new ApiError('bad-request', `Cannot ${change.op} ${xPath}: the object is missing`, {
      code: 'missing-body',
      'x-path': xPath,
    });
  return r;
}

function withName(r: Resolved, value: JsonObject): JsonObject {
  return r.kind === 'item' && value.name === undefined ? { name: r.name ?? '', ...value } : value;
}

function checkPreconditions(change: Change, slot: Slot, xPath: string): void {
  if (change.ifMatch !== undefined) {
    if (slot.beforeEtag === undefined)
      throw new ApiError(
        'precondition-failed',
        `Cannot ${change.op} ${xPath}: the ETag condition ${change.ifMatch} failed because the object does not exist`,
        { code: 'etag-mismatch', 'x-path': xPath },
      );
    if (!listsEtag(change.ifMatch, slot.beforeEtag))
      throw new ApiError(
        'precondition-failed',
        `Cannot ${change.op} ${xPath}: its ETag is ${slot.beforeEtag}, not ${change.ifMatch}`,
        { code: 'etag-mismatch', 'x-path': xPath },
      );
  }
  if (
    change.ifNoneMatch !== undefined &&
    slot.beforeEtag !== undefined &&
    listsEtagWeakly(change.ifNoneMatch, slot.beforeEtag)
  ) {
    throw new ApiError(
      'precondition-failed',
      `Cannot ${change.op} ${xPath}: If-None-Match ${change.ifNoneMatch} failed (the object exists with ETag ${slot.beforeEtag})`,
      { code: 'etag-match', 'x-path': xPath },
    );
  }
}

/** A later change on a path already written in this transaction must build on it. */
function checkSequence(change: Change, slot: Slot, index: number, xPath: string): void {
  if (slot.lastOp === undefined) return;
  const prev = slot.lastOp;
  const builds =
    change.op === 'update'
      ? slot.after !== undefined
      : change.op === 'create' && (prev === 'delete' || prev === 'remove');
  if (!builds) {
    throw new ApiError(
      'bad-request',
      `Cannot ${change.op} ${xPath} as change ${index + 1}: change ${(slot.lastIndex ?? 0) + 1} already did ${prev} on the same path (only an update, or a create after a delete, may follow)`,
      { code: 'conflicting-operations', 'x-path': xPath, index, 'previous-index': slot.lastIndex },
    );
  }
}

function apply(change: Change, slot: Slot, xPath: string): JsonObject | undefined {
  const current = slot.after;
  const r = slot.resolved;
  switch (change.op) {
    case 'create':
      if (current)
        throw new ApiError('exists', `Cannot create ${xPath}: it already exists`, { code: 'exists', 'x-path': xPath });
      return withName(r, change.value ?? {});
    case 'replace':
      return withName(r, change.value ?? {});
    case 'update': {
      // A singleton (system/settings) always exists in effect, with its defaults: an update
      // of one never written starts from the empty object.
      const base = current ?? (r.kind === 'object' ? {} : undefined);
      if (!base)
        throw new ApiError('not-found', `Cannot update ${xPath}: it does not exist`, {
          code: 'missing',
          'x-path': xPath,
        });
      if (change.jsonPatch !== undefined) {
        // A secret is patched in its redacted form: a `test` op on the plaintext would reveal values.
        const patched = applyJsonPatch(r.def.patchForm ? r.def.patchForm(base) : base, change.jsonPatch);
        if (!isObject(patched))
          throw new ApiError('invalid-patch', `Cannot apply the JSON Patch to ${xPath}: the result is not an object`, {
            code: 'not-an-object',
            'x-path': xPath,
          });
        return patched;
      }
      const rules = listRulesOf(r.def);
      const patch = change.value ?? {};
      const repeated = duplicateKeyErrors(r.def, patch, xPath, 'in the patch');
      if (repeated.length > 0) throw combine(repeated);
      return mergePatch(base, patch, rules.ordered, rules.keyOf);
    }
    case 'delete':
      if (!current)
        throw new ApiError('not-found', `Cannot delete ${xPath}: it does not exist`, {
          code: 'missing',
          'x-path': xPath,
        });
      return undefined;
    case 'remove':
      return undefined;
  }
}

function checkObject(ctx: TxContext, slot: Slot, xPath: string, slots: Map<string, Slot>): ApiError[] {
  const r = slot.resolved;
  const after = slot.after;
  if (!after) {
    // Never there (a vault a secret names that does not exist): nothing goes, nothing to check
    // (the secret's own error says the vault is missing).
    if (!slot.before) return [];
    // An object whose nested objects remain cannot go (a vault that still has secrets).
    for (const child of childListsOf(r)) {
      const prefixKey = configKey(slot.tenant, `${child.listPath}/`);
      for (const [k, s] of slots)
        if (k.startsWith(prefixKey) && s.after)
          return [
            new ApiError('conflict', `Cannot delete ${xPath}: ${child.def.id} ${s.resolved.name} still uses it`, {
              code: 'in-use',
              'x-path': xPath,
            }),
          ];
    }
    return [];
  }
  const wctx = { tenant: slot.tenant, rootTenant: ctx.rootTenant, key: slot.key };
  const checked = objectProblems(r.def, after, xPath, wctx);
  slot.compiled = checked.compiled;
  const errors = checked.errors;
  if (r.kind === 'item' && after.name !== r.name) {
    errors.push(
      new ApiError(
        'bad-request',
        `Cannot change name to ${JSON.stringify(after.name)} in ${xPath}: it must stay ${r.name}`,
        { code: 'name-mismatch', path: 'name', 'x-path': xPath },
      ),
    );
  }
  const parent = parentPathOf(r);
  if (parent && !slots.get(configKey(slot.tenant, parent.path))?.after)
    errors.push(
      new ApiError('not-found', `Cannot store ${xPath}: ${parent.def.id} ${parent.name} does not exist`, {
        code: 'missing-parent',
        'x-path': xPath,
      }),
    );
  return errors;
}

/**
 * A tenant that still holds objects cannot go (as a vault that still has secrets): they would
 * stay in the store, out of every tenant's reach, their exporters running, and the name could
 * not be used again. Objects deleted by the same transaction do not count.
 */
async function tenantStillHolds(ctx: TxContext, slot: Slot, slots: Map<string, Slot>): Promise<ApiError[]> {
  const name = slot.resolved.name as string;
  const held = (await ctx.store.list(name)).filter((e) => {
    const s = slots.get(e.key);
    return !(s && s.lastOp !== undefined && !s.after);
  });
  if (held.length === 0) return [];
  const shown = held.slice(0, 3).map((e) => xPathOf(e.key.slice(name.length + 1)));
  const more = held.length > shown.length ? ` and ${held.length - shown.length} more` : '';
  return [
    new ApiError(
      'conflict',
      `Cannot delete ${xPathOf(slot.resolved.path)}: tenant ${name} still holds ${held.length} object${held.length === 1 ? '' : 's'} (${shown.join(', ')}${more}); delete them first (x-tenant: ${name})`,
      { code: 'in-use', 'x-path': xPathOf(slot.resolved.path) },
    ),
  ];
}

/**
 * A written secret (a resource with `unredact`) whose caller may not read its values in clear
 * (`/v1/state/...` of it): the write counts as a change even when its values equal the stored
 * ones, so neither a dry-run nor the ETag of a real write tells the caller whether a guess of
 * the value was right.
 */
function blind(ctx: TxContext, s: Slot): boolean {
  if (s.lastOp === undefined || !s.after || !s.resolved.def.unredact || !ctx.permissions) return false;
  return !ctx.permissions.allows(s.resolved.xPath.replace(/^\/v1\/config\//, '/v1/state/'), 'read', s.tenant);
}

async function runOnce(
  ctx: TxContext,
  changes: Change[],
  resolved: Resolved[],
  mode: TxMode,
): Promise<TxResult | 'retry'> {
  const tenants = changes.map((c) => c.tenant ?? ctx.tenant);
  const slots = await loadSlots(ctx, resolved, tenants);
  const errors: ApiError[] = [];
  const created: boolean[] = [];
  changes.forEach((change, i) => {
    const r = resolved[i] as Resolved;
    const xPath = xPathOf(r.path);
    const slot = slots.get(configKey(tenants[i] as string, r.path)) as Slot;
    try {
      checkSequence(change, slot, i, xPath);
      checkPreconditions(change, slot, xPath);
      let next = apply(change, slot, xPath);
      // Placeholders keep the value this transaction has so far (not the stored one: it may have been deleted or just created).
      if (next && r.def.unredact) next = r.def.unredact(next, slot.after);
      created.push(slot.after === undefined && next !== undefined);
      slot.after = next;
      slot.lastOp = change.op;
      slot.lastIndex = i;
      if (change.ifMatch !== undefined || change.ifNoneMatch !== undefined || change.jsonPatch !== undefined)
        slot.guarded = true;
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      errors.push(prefix(err, xPath));
      created.push(false);
    }
  });
  for (const slot of slots.values()) {
    if (slot.lastOp === undefined && childListsOf(slot.resolved).length === 0) continue;
    errors.push(...checkObject(ctx, slot, xPathOf(slot.resolved.path), slots));
    if (slot.lastOp !== undefined && slot.before && !slot.after && slot.resolved.def.id === 'tenant')
      errors.push(...(await tenantStillHolds(ctx, slot, slots)));
    // Only resources with checks against the tenant tree (subtenants, vault sharing) have any.
    if (slot.lastOp !== undefined && slot.after && ctx.tenants && slot.resolved.def.checkInTenant) {
      const rootTenant = ctx.rootTenant ?? ctx.tenant;
      for (const e of await tenantChecks(ctx.tenants, rootTenant, slot.tenant, slot.resolved, slot.before, slot.after))
        errors.push(prefix(e, xPathOf(slot.resolved.path)));
    }
  }
  if (errors.length > 0) throw combine(errors);
  for (const slot of slots.values())
    if (slot.lastOp !== undefined && slot.after && slot.resolved.def.settle)
      slot.after = await slot.resolved.def.settle(slot.after, slot.before);
  // Sets in their canonical order, so that reordering one changes neither content nor ETag.
  for (const slot of slots.values())
    if (slot.lastOp !== undefined && slot.after) {
      const rules = listRulesOf(slot.resolved.def);
      slot.after = canonicalOrder(slot.after, rules.ordered, rules.keyOf);
    }
  const changed = [...slots.values()].filter((s) => blind(ctx, s) || !deepEqual(s.before ?? null, s.after ?? null));
  if (mode === 'validate') return { created, etags: {} };
  if (mode === 'dry-run')
    return { created, etags: {}, impacted: await impactedResources(ctx.store, ctx.tenant, changed) };
  const writes: WriteOp[] = [];
  const history: RevisionChange[] = [];
  for (const s of changed) {
    const expect = s.beforeEtag ?? null;
    const stored = s.after ? await toStored(ctx, s) : undefined;
    writes.push(stored ? { op: 'put', key: s.key, value: stored, expect } : { op: 'delete', key: s.key, expect });
    history.push({ key: s.key, ...(s.stored ? { before: s.stored } : {}), ...(stored ? { after: stored } : {}) });
  }
  if (writes.length > 0) writes.push(...guardWrites(slots, changed));
  if (writes.length === 0)
    return {
      created,
      etags: Object.fromEntries(
        [...slots.values()].filter((s) => s.beforeEtag).map((s) => [s.resolved.path, s.beforeEtag as string]),
      ),
    };
  const note =
    ctx.actor !== undefined
      ? { time: new Date().toISOString(), user: ctx.actor, tenant: ctx.tenant, changes: history }
      : undefined;
  const result = await ctx.store.commit(writes, note);
  if (!result.ok) return 'retry';
  ctx.committed?.(writes.map((w) => w.key));
  const etags: Record<string, string> = {};
  for (const s of slots.values()) {
    const e = result.etags[s.key] ?? s.beforeEtag;
    if (e && s.after) etags[s.resolved.path] = e;
    const written = result.etags[s.key];
    if (written && s.after && s.compiled !== undefined) s.resolved.def.keep?.(s.key, written, s.compiled);
  }
  return { created, etags, revision: result.revision };
}

const MAX_RUNS = 50;

export async function runTransaction(ctx: TxContext, changes: Change[], mode: TxMode = 'commit'): Promise<TxResult> {
  const problems: ApiError[] = [];
  const resolved: Resolved[] = [];
  // Tenants this body makes, each in the tenant it is made in: a later change with that
  // x-tenant is the caller's as in its parent (a tenant and its first user in one body).
  const made = new Map<string, string>();
  for (const change of changes) {
    try {
      const r = resolveChange(change);
      const newTenant = change.tenant !== undefined ? made.get(change.tenant) : undefined;
      if (ctx.permissions)
        authorizeChange(ctx.permissions, newTenant !== undefined ? { ...change, tenant: newTenant } : change);
      const t = /^system\/tenants\/([^/]+)$/.exec(change.path)?.[1];
      // Only a name no tenant has yet (names are global): never a way into another tenant's tree.
      if (t !== undefined && (change.op === 'create' || change.op === 'replace') && ctx.tenants) {
        const parent = change.tenant ?? ctx.tenant;
        const isNew = await ctx.tenants.checkNewTenant(parent, t).then(
          () => true,
          () => false,
        );
        if (isNew) made.set(t, parent);
      }
      if (r.def.needsUnsealed && ctx.strongbox.sealed)
        throw new ApiError('sealed', `Cannot ${change.op} ${xPathOf(change.path)}: the secret store is sealed`, {
          code: 'sealed',
        });
      resolved.push(r);
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      problems.push(prefix(err, xPathOf(change.path)));
    }
  }
  if (problems.length > 0) throw combine(problems);
  for (let run = 0; run < MAX_RUNS; run++) {
    const outcome = await runOnce(ctx, changes, resolved, mode);
    if (outcome !== 'retry') return outcome;
    await new Promise((r) => setTimeout(r, backoffDelay(run, { baseMs: 1, maxMs: 50, jitter: 'full' })));
  }
  throw new ApiError('conflict', 'Cannot commit the change: other writers kept changing the same objects; try again', {
    code: 'contention',
  });
}
