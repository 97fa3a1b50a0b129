/**
 * Field-level difference between two versions of a configuration object, for the dry-run reply
 * (impacted-resources[].fields[] = {field, added, deleted}).
 *
 * Each object is flattened to leaves, field → values (strings), then the two are compared:
 * `added` are the values only after has, `deleted` those only before has. A changed scalar gives
 * {added: [new], deleted: [old]}; creating an object adds every leaf, deleting one deletes them.
 *
 * Field names, a readable scheme close to the request body:
 * - members joined with '/': `topology/parent-site`; a '/' or '~' inside a member name is
 *   escaped as in a JSON pointer (`~1`, `~0`), so `labels/app~1tier` is the label `app/tier`;
 * - ordered arrays (the `ordered` predicate, as for the plain patch) are compared by position:
 *   `management-ipv4-access-list[0]`, `headers[1]/value`;
 * - in other arrays, an object with a string key (`name`, or what `keyOf` names: `host-id` for a
 *   site's hosts) is addressed by it (`hosts[host-id=h1]/labels/a`),
 *   scalar entries are the values of the array's own field (`topics`: added/deleted are the set
 *   difference), and any other entry (object without a name, nested array) is a value written as
 *   its canonical JSON text.
 * Values: strings as they are, numbers and booleans via String(), null as 'null', and an object
 * or array only when empty, as '{}' or '[]' (so emptying `topics` deletes its entries and adds
 * '[]'). The result is sorted by field (code-unit order), so it is deterministic.
 */
import { canonicalJson, isObject, type Json, type JsonObject } from '../lib/json.js';
import { byName, contractOrderedArrays, type ListKeys, type OrderedArrays } from './merge.js';
import { escapeToken } from '../lib/json-pointer.js';

export type FieldChange = { field: string; added: string[]; deleted: string[] };

type Leaves = Map<string, string[]>;

/** `ordered` defaults to the ordered arrays (headers, management-ipv4-access-list). */
export function diffObjects(
  before: JsonObject | undefined,
  after: JsonObject | undefined,
  ordered: OrderedArrays = contractOrderedArrays,
  keyOf: ListKeys = byName,
): FieldChange[] {
  const rules = { ordered, keyOf };
  const old = flatten(before, rules);
  const now = flatten(after, rules);
  const fields = [...new Set([...old.keys(), ...now.keys()])].sort(byCodeUnit);
  const changes: FieldChange[] = [];
  for (const field of fields) {
    const was = old.get(field) ?? [];
    const is = now.get(field) ?? [];
    const wasSet = new Set(was);
    const isSet = new Set(is);
    const added = is.filter((v) => !wasSet.has(v));
    const deleted = was.filter((v) => !isSet.has(v));
    if (added.length > 0 || deleted.length > 0) changes.push({ field, added, deleted });
  }
  return changes;
}

function byCodeUnit(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

type Rules = { ordered: OrderedArrays; keyOf: ListKeys };

function flatten(obj: JsonObject | undefined, rules: Rules): Leaves {
  const out: Leaves = new Map();
  if (obj) {
    for (const key of Object.keys(obj)) walk(obj[key] as Json, escapeToken(key), [key], rules, out);
  }
  return out;
}

function addLeaf(out: Leaves, field: string, value: string): void {
  const values = out.get(field);
  if (!values) out.set(field, [value]);
  else if (!values.includes(value)) values.push(value);
}

function scalarText(v: string | number | boolean | null): string {
  return typeof v === 'string' ? v : String(v);
}

/** `path` holds member names only (array entries add nothing), as the ordered predicate expects. */
function walk(v: Json, field: string, path: string[], rules: Rules, out: Leaves): void {
  if (isObject(v)) {
    const keys = Object.keys(v);
    if (keys.length === 0) addLeaf(out, field, '{}');
    for (const key of keys) walk(v[key] as Json, `${field}/${escapeToken(key)}`, [...path, key], rules, out);
    return;
  }
  if (!Array.isArray(v)) {
    addLeaf(out, field, scalarText(v));
    return;
  }
  if (v.length === 0) {
    addLeaf(out, field, '[]');
    return;
  }
  if (rules.ordered(path)) {
    v.forEach((entry, i) => walk(entry, `${field}[${i}]`, path, rules, out));
    return;
  }
  const key = rules.keyOf(path);
  for (const entry of v) {
    const k = isObject(entry) ? entry[key] : undefined;
    if (isObject(entry) && typeof k === 'string') walk(entry, `${field}[${key}=${k}]`, path, rules, out);
    else if (isObject(entry) || Array.isArray(entry)) addLeaf(out, field, canonicalJson(entry));
    else addLeaf(out, field, scalarText(entry));
  }
}
