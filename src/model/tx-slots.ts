/**
 * The working set of a transaction: one slot per object it reads (what was read, what it
 * will be), how slots are loaded and stored, and the guard writes that keep the objects a
 * transaction only depends on unchanged until its commit lands.
 */
import type { JsonObject } from '../lib/json.js';
import type { WriteOp } from '../store/store.js';
import { decryptSecret, encryptSecret } from '../secrets/secrets.js';
import { prepareUserForStore } from '../auth/users.js';
import { configKey } from '../store/keys.js';
import { resolvePath, type Resolved } from './resources.js';
import type { Op, TxContext } from './tx-types.js';

export type Slot = {
  resolved: Resolved;
  tenant: string;
  key: string;
  before: JsonObject | undefined;
  beforeEtag: string | undefined;
  after: JsonObject | undefined;
  lastOp?: Op;
  lastIndex?: number;
  /** The object as stored (ciphertext for secrets), to re-assert it unchanged at commit. */
  stored: JsonObject | undefined;
  /** The outcome depends on this object's content as read (x-etag, If-Match, a JSON Patch test, a vault parent). */
  guarded?: boolean;
};

/** Reads one object in its working (plaintext) form. */
type Loaded = { value: JsonObject | undefined; etag: string | undefined; stored: JsonObject | undefined };

async function load(ctx: TxContext, r: Resolved, key: string): Promise<Loaded> {
  const entry = await ctx.store.get(key, { fresh: true });
  if (!entry) return { value: undefined, etag: undefined, stored: undefined };
  const value = r.def.id === 'secret' ? decryptSecret(ctx.strongbox, key, entry.value) : entry.value;
  return { value, etag: entry.etag, stored: entry.value };
}

/** Loads every slot the changes touch, plus vault parents/children the checks look at. */
export async function loadSlots(ctx: TxContext, resolved: Resolved[], tenants: string[]): Promise<Map<string, Slot>> {
  const slots = new Map<string, Slot>();
  const want = new Map<string, Resolved>();
  const tenantOfKey = new Map<string, string>();
  const add = (tenant: string, r: Resolved) => {
    const k = configKey(tenant, r.path);
    want.set(k, r);
    tenantOfKey.set(k, tenant);
  };
  for (const [i, r] of resolved.entries()) {
    const tenant = tenants[i] as string;
    add(tenant, r);
    const vault = r.params.vault;
    if (r.def.parent === 'vault' && vault !== undefined) {
      const pr = resolvePath(`strongbox/vaults/${vault}`);
      if (pr) add(tenant, pr);
    }
  }
  for (const [i, r] of resolved.entries()) {
    if (r.def.id !== 'vault') continue;
    const tenant = tenants[i] as string;
    for (const e of await ctx.store.list(configKey(tenant, `${r.path}/secrets`))) {
      const sr = resolvePath(e.key.slice(tenant.length + 1));
      if (sr) add(tenant, sr);
    }
  }
  const keys = [...want.keys()];
  const loaded = await Promise.all(keys.map((k) => load(ctx, want.get(k) as Resolved, k)));
  keys.forEach((k, i) => {
    const l = loaded[i] as Loaded;
    slots.set(k, {
      resolved: want.get(k) as Resolved,
      tenant: tenantOfKey.get(k) as string,
      key: k,
      before: l.value,
      beforeEtag: l.etag,
      after: l.value,
      stored: l.stored,
    });
  });
  return slots;
}

export async function toStored(ctx: TxContext, slot: Slot): Promise<JsonObject> {
  const after = slot.after as JsonObject;
  if (slot.resolved.def.id === 'secret') return encryptSecret(ctx.strongbox, slot.key, after);
  if (slot.resolved.def.id === 'user') return prepareUserForStore(after, slot.before);
  return after;
}

/**
 * Objects the transaction read a condition on but does not change (an x-etag beside a write
 * elsewhere, a JSON Patch that only tests, the vault of a written secret) must still be as
 * read when the commit lands, or two transactions could each pass a check the other one
 * breaks (write skew). The store checks expectations only on written keys, so each such
 * object is written back byte for byte with its read ETag expected: its content and ETag
 * stay the same, and a concurrent change makes the commit fail and the transaction re-run.
 */
export function guardWrites(slots: Map<string, Slot>, changed: Slot[]): WriteOp[] {
  const changedKeys = new Set(changed.map((s) => s.key));
  for (const s of changed) {
    const vault = s.resolved.params.vault;
    if (s.after && s.resolved.def.parent === 'vault' && vault !== undefined) {
      const parent = slots.get(configKey(s.tenant, `strongbox/vaults/${vault}`));
      if (parent) parent.guarded = true;
    }
  }
  const out: WriteOp[] = [];
  for (const s of slots.values()) {
    if (!s.guarded || changedKeys.has(s.key) || !s.stored || !s.beforeEtag) continue;
    out.push({ op: 'put', key: s.key, value: s.stored, expect: s.beforeEtag });
  }
  return out;
}
