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
import type { JsonObject } from '../lib/json.js';
import type { Store } from '../store/store.js';
import { REDACTED } from '../secrets/secrets.js';
import { configKey } from '../store/keys.js';
import { diffObjects, type FieldChange } from './diff.js';
import { listRulesOf, resources, type ResourceDef, type Resolved } from './resources.js';

export type Impacted = { path: string; fields: FieldChange[] };

type ChangedSlot = { resolved: Resolved; before: JsonObject | undefined; after: JsonObject | undefined };

/** Per-process key: equal secret values map to equal tokens, nothing maps back to a value. */
const maskKey = randomBytes(32);
const hide = (v: unknown) => 'masked:' + createHmac('sha256', maskKey).update(String(v)).digest('base64url');

function masked(obj: JsonObject | undefined, def: ResourceDef): JsonObject | undefined {
  return obj && def.masked ? def.masked(obj, hide) : obj;
}

function unmask(changes: FieldChange[]): FieldChange[] {
  const fix = (list: string[]) => list.map((v) => (v.startsWith('masked:') ? REDACTED : v));
  return changes.map((c) => ({ field: c.field, added: fix(c.added), deleted: fix(c.deleted) }));
}

/** `<id>:<name>` of an addressed object; a nested one's name is its parents' keys and its own (`vault/secret`). */
function refOf(r: Resolved): string | undefined {
  if (r.name === undefined) return undefined;
  return `${r.def.id}:${[...Object.values(r.params), r.name].join('/')}`;
}

/**
 * Objects of the tenant that depend on a changed one (resources with `dependsOn`), found
 * until nothing new turns up, so a dependent of a dependent counts (an application's
 * deployments, then the webhooks those deployments place).
 */
async function dependentsOf(store: Store, tenant: string, changed: Set<string>): Promise<string[]> {
  const found = new Set<string>();
  const lists = new Map<string, Array<{ value: JsonObject }>>();
  const dependents = resources.filter((d) => d.dependsOn && d.shape === 'list' && !d.parent);
  for (let grew = true; grew;) {
    grew = false;
    for (const def of dependents) {
      if (!def.dependsOnIds?.some((id) => [...changed].some((c) => c.startsWith(`${id}:`)))) continue;
      const listPath = def.segments.join('/');
      let entries = lists.get(listPath);
      if (!entries) lists.set(listPath, (entries = await store.list(configKey(tenant, listPath))));
      for (const e of entries) {
        const name = e.value.name;
        if (typeof name !== 'string') continue;
        const path = `/v1/config/${listPath}/${name}`;
        if (found.has(path) || !def.dependsOn?.(e.value, tenant).some((d) => changed.has(d))) continue;
        found.add(path);
        changed.add(`${def.id}:${name}`);
        grew = true;
      }
    }
  }
  return [...found];
}

export async function impactedResources(store: Store, tenant: string, changed: ChangedSlot[]): Promise<Impacted[]> {
  const out: Impacted[] = changed
    .map((s) => {
      const def = s.resolved.def;
      const rules = listRulesOf(def);
      return {
        path: `/v1/config/${s.resolved.path}`,
        fields: unmask(diffObjects(masked(s.before, def), masked(s.after, def), rules.ordered, rules.keyOf)),
      };
    })
    .sort((a, b) => a.path.localeCompare(b.path));
  const listed = new Set(out.map((i) => i.path));
  const refs = new Set(changed.flatMap((s) => refOf(s.resolved) ?? []));
  for (const path of (await dependentsOf(store, tenant, refs)).sort()) {
    if (listed.has(path)) continue;
    listed.add(path);
    out.push({ path, fields: [] });
  }
  return out;
}
