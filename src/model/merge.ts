/**
 * Plain patch: the body of a PATCH with a JSON or YAML content type is
 * merged into the stored object.
 *
 * - Objects merge recursively; a scalar replaces the existing value or is created.
 * - `null` deletes the member, as in RFC 7386 (JSON Merge Patch). Nulls inside a newly created
 *   object are dropped the same way, so a patch never stores a null member.
 * - Arrays whose path is ordered (`ordered(path)` true) are replaced as a whole.
 * - Other arrays are merged and never lose entries: an object entry with a string key (`name`,
 *   or the member `keyOf(path)` names, `host-id` for a site's `hosts`) is merged into the target
 *   entry with the same key (or appended); any other entry is added as a set member (appended
 *   unless an equal entry is already there).
 *
 * `path` is the list of member names from the object root; array entries add nothing to it, so
 * the `value` of a header entry has the path ['headers', 'value'].
 */
import { canonicalJson, clone, isObject, type Json, type JsonObject } from '../lib/json.js';
import { escapeToken } from '../lib/json-pointer.js';

/** Tells whether the array at `path` (member names from the root) keeps its order. */
export type OrderedArrays = (path: readonly string[]) => boolean;

/** These two arrays are ordered; every other array is unordered (a set). */
export const contractOrderedArrays: OrderedArrays = (path) => {
  const p = path.join('/');
  return p === 'headers' || p === 'management-ipv4-access-list';
};

/** Names the key member of the entries of the array at `path` (`name` unless told otherwise). */
export type ListKeys = (path: readonly string[]) => string;

export const byName: ListKeys = () => 'name';

/** Returns a new object; neither input is modified and the result shares nothing with them. */
export function mergePatch(
  target: JsonObject,
  patch: JsonObject,
  ordered: OrderedArrays,
  keyOf: ListKeys = byName,
): JsonObject {
  return mergeObject(target, patch, [], { ordered, keyOf });
}

type Rules = { ordered: OrderedArrays; keyOf: ListKeys };

function mergeObject(target: JsonObject, patch: JsonObject, path: string[], rules: Rules): JsonObject {
  const out: JsonObject = {};
  for (const key of Object.keys(target)) {
    if (!Object.hasOwn(patch, key)) setMember(out, key, copy(target[key] as Json));
  }
  for (const key of Object.keys(patch)) {
    const value = patch[key] as Json;
    if (value === null) continue;
    const current = Object.hasOwn(target, key) ? target[key] : undefined;
    setMember(out, key, mergeValue(current, value, [...path, key], rules));
  }
  return out;
}

/** A member named `__proto__` (legal JSON) must stay data, not become the prototype. */
function setMember(obj: JsonObject, key: string, value: Json): void {
  if (key === '__proto__')
    Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  else obj[key] = value;
}

function mergeValue(current: Json | undefined, value: Json, path: string[], rules: Rules): Json {
  if (isObject(value)) return mergeObject(isObject(current) ? current : {}, value, path, rules);
  if (Array.isArray(value)) {
    if (Array.isArray(current) && !rules.ordered(path)) return mergeArray(current, value, path, rules);
    return copy(value);
  }
  return value;
}

/** structuredClone only where there is something to copy: scalars are immutable. */
function copy(v: Json): Json {
  return typeof v === 'object' && v !== null ? clone(v) : v;
}

function keyedEntry(v: Json, key: string): string | undefined {
  const k = isObject(v) ? v[key] : undefined;
  return typeof k === 'string' ? k : undefined;
}

function mergeArray(target: Json[], patch: Json[], path: string[], rules: Rules): Json[] {
  const out = target.map(copy);
  const key = rules.keyOf(path);
  const namedEntry = (v: Json) => keyedEntry(v, key);
  // Indexes by name and by canonical text, kept up to date as entries are appended, so that a
  // name or value repeated inside the patch itself is merged rather than duplicated.
  const byKey = new Map<string, number>();
  const members = new Set<string>();
  out.forEach((v, i) => {
    const name = namedEntry(v);
    if (name !== undefined) {
      if (!byKey.has(name)) byKey.set(name, i);
    } else {
      members.add(canonicalJson(v));
    }
  });
  for (const entry of patch) {
    const name = namedEntry(entry);
    if (name !== undefined && isObject(entry)) {
      const at = byKey.get(name);
      const existing = at === undefined ? undefined : out[at];
      if (at !== undefined && isObject(existing)) {
        out[at] = mergeObject(existing, entry, path, rules);
      } else {
        byKey.set(name, out.length);
        out.push(mergeObject({}, entry, path, rules));
      }
      continue;
    }
    const text = canonicalJson(entry);
    if (members.has(text)) continue;
    members.add(text);
    out.push(copy(entry));
  }
  return out;
}

/** Two entries of one keyed list with the same key: JSON pointers of both, first one first. */
export type DuplicateKey = { key: string; value: string; list: string; first: string; second: string };

/**
 * Every keyed list (unordered, entries are objects with a string key) in which a key appears
 * twice, at any depth: such a list could not be merged by key, so it is never stored.
 */
export function duplicateKeys(obj: JsonObject, ordered: OrderedArrays, keyOf: ListKeys = byName): DuplicateKey[] {
  const out: DuplicateKey[] = [];
  const walk = (v: Json, path: string[], pointer: string): void => {
    if (isObject(v)) {
      for (const k of Object.keys(v)) walk(v[k] as Json, [...path, k], `${pointer}/${escapeToken(k)}`);
      return;
    }
    if (!Array.isArray(v)) return;
    const keyed = !ordered(path);
    const key = keyOf(path);
    const seen = new Map<string, number>();
    v.forEach((entry, i) => {
      const value = keyed ? keyedEntry(entry, key) : undefined;
      if (value !== undefined) {
        const at = seen.get(value);
        if (at === undefined) seen.set(value, i);
        else out.push({ key, value, list: pointer, first: `${pointer}/${at}`, second: `${pointer}/${i}` });
      }
      walk(entry, path, `${pointer}/${i}`);
    });
  };
  walk(obj, [], '');
  return out;
}
