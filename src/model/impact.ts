/**
 * The dry-run reply: `impacted-resources`, one entry per object that would
 * change, field by field, followed by the objects that depend on a changed one (their
 * `fields` list is empty: they change behaviour, not content):
 * - a webhook whose variables read a changed secret (or any secret of a changed vault);
 * - a webhook placed by a changed application deployment;
 * - a deployment of a changed application.
 * Secret values never appear: a changed secret value is shown as REDACTED on both sides.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { isObject, type JsonObject } from '../lib/json.js';
import type { Store } from '../store/store.js';
import { REDACTED } from '../secrets/secrets.js';
import { configKey } from '../store/keys.js';
import { diffObjects, type FieldChange } from './diff.js';
import { listRulesOf, type Resolved } from './resources.js';

export type Impacted = { path: string; fields: FieldChange[] };

type ChangedSlot = { resolved: Resolved; before: JsonObject | undefined; after: JsonObject | undefined };

/** Per-process key: equal secret values map to equal tokens, nothing maps back to a value. */
const maskKey = randomBytes(32);

function masked(obj: JsonObject | undefined, resourceId: string): JsonObject | undefined {
  if (!obj) return obj;
  const hide = (v: unknown) => 'masked:' + createHmac('sha256', maskKey).update(String(v)).digest('base64url');
  if (resourceId === 'secret' && isObject(obj.data)) {
    return { ...obj, data: Object.fromEntries(Object.entries(obj.data).map(([k, v]) => [k, hide(v)])) };
  }
  if (resourceId === 'user') {
    const out: JsonObject = { ...obj };
    for (const f of ['password', 'password-hash']) if (out[f] !== undefined) out[f] = hide(out[f]);
    return out;
  }
  return obj;
}

function unmask(changes: FieldChange[]): FieldChange[] {
  const fix = (list: string[]) => list.map((v) => (v.startsWith('masked:') ? REDACTED : v));
  return changes.map((c) => ({ field: c.field, added: fix(c.added), deleted: fix(c.deleted) }));
}

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

export async function impactedResources(store: Store, tenant: string, changed: ChangedSlot[]): Promise<Impacted[]> {
  const out: Impacted[] = changed
    .map((s) => {
      const id = s.resolved.def.id;
      const rules = listRulesOf(s.resolved.def);
      return {
        path: `/v1/config/${s.resolved.path}`,
        fields: unmask(diffObjects(masked(s.before, id), masked(s.after, id), rules.ordered, rules.keyOf)),
      };
    })
    .sort((a, b) => a.path.localeCompare(b.path));
  const listed = new Set(out.map((i) => i.path));
  const secrets = new Set<string>();
  const vaults = new Set<string>();
  const deployments = new Set<string>();
  const applications = new Set<string>();
  for (const s of changed) {
    const r = s.resolved;
    if (r.def.id === 'secret') secrets.add(`${r.params.vault}/${r.name}`);
    if (r.def.id === 'vault' && r.name) vaults.add(r.name);
    if (r.def.id === 'deployment' && r.name) deployments.add(r.name);
    if (r.def.id === 'application' && r.name) applications.add(r.name);
  }
  const dependents: string[] = [];
  if (applications.size > 0) {
    for (const e of await store.list(configKey(tenant, 'application-deployments'))) {
      const app = e.value['application-name'];
      if (typeof app === 'string' && applications.has(app) && typeof e.value.name === 'string') {
        dependents.push(`/v1/config/application-deployments/${e.value.name}`);
        deployments.add(e.value.name);
      }
    }
  }
  if (secrets.size + vaults.size + deployments.size > 0) {
    for (const e of await store.list(configKey(tenant, 'volga/webhooks'))) {
      const w = e.value;
      const usesSecret = (Array.isArray(w.variables) ? w.variables : []).some((v) => {
        const src = isObject(v) ? v['value-from-vault-secret'] : undefined;
        return (
          isObject(src) &&
          typeof src.vault === 'string' &&
          src['from-tenant'] === undefined &&
          (vaults.has(src.vault) || secrets.has(`${src.vault}/${String(src.secret)}`))
        );
      });
      const placement = isObject(w['site-placement']) ? w['site-placement'] : {};
      const placedBy = strings(placement['application-deployments']).some((d) => deployments.has(d));
      if (usesSecret || placedBy) dependents.push(`/v1/config/volga/webhooks/${String(w.name)}`);
    }
  }
  for (const path of dependents.sort()) {
    if (listed.has(path)) continue;
    listed.add(path);
    out.push({ path, fields: [] });
  }
  return out;
}
