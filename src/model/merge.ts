/**
 * Plain patch: the body of a PATCH with a JSON or YAML content type is
 * merged into the stored object.
 *
 * - Objects merge recursively; a scalar replaces the existing value or is created.
 * - `null` deletes the member, as in RFC 7386 (JSON Merge Patch). Nulls inside a newly created
 *   object are dropped the same way, so a patch never stores a null member.
 * - Arrays whose path is ordered (`ordered(path)` true) are replaced as a whole.
 * - Other arrays are merged and never lose entries: an object entry with a string `name` is
 *   merged into the target entry of the same name (or appended); any other entry is added as a
 *   set member (appended unless an equal entry is already there).
 *
 * `path` is the list of member names from the object root; array entries add nothing to it, so
 * the `value` of a header entry has the path ['headers', 'value'].
 */
import { canonicalJson, clone, isObject, type Json, type JsonObject } from '../json.js';

/** Tells whether the array at `path` (member names from the root) keeps its order. */
export type OrderedArrays = (path: readonly string[]) => boolean;

/** These two arrays are ordered; every other array is unordered (a set). */
export const contractOrderedArrays: OrderedArrays = (path) => {
  const p = path.join('/');
  return p === 'headers' || p === 'management-ipv4-access-list';
};

/** Returns a new object; neither input is modified and the result shares nothing with them. */
export function mergePatch(target: JsonObject, patch: JsonObject, ordered: OrderedArrays): JsonObject {
  return mergeObject(target, patch, [], ordered);
}

function mergeObject(target: JsonObject, patch: JsonObject, path: string[], ordered: OrderedArrays): JsonObject {
  const out: JsonObject = {};
  for (const key of Object.keys(target)) {
    if (!Object.hasOwn(patch, key)) setMember(out, key, copy(target[key] as Json));
  }
  for (const key of Object.keys(patch)) {
    const value = patch[key] as Json;
    if (value === null) continue;
    const current = Object.hasOwn(target, key) ? target[key] : undefined;
    setMember(out, key, mergeValue(current, value, [...path, key], ordered));
  }
  return out;
}

/** A member named `__proto__` (legal JSON) must stay data, not become the prototype. */
function setMember(obj: JsonObject, key: string, value: Json): void {
  if (key === '__proto__')
    Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  else obj[key] = value;
}

function mergeValue(current: Json | undefined, value: Json, path: string[], ordered: OrderedArrays): Json {
  if (isObject(value)) return mergeObject(isObject(current) ? current : {}, value, path, ordered);
  if (Array.isArray(value)) {
    if (Array.isArray(current) && !ordered(path)) return mergeArray(current, value, path, ordered);
    return copy(value);
  }
  return value;
}

/** structuredClone only where there is something to copy: scalars are immutable. */
function copy(v: Json): Json {
  return typeof v === 'object' && v !== null ? clone(v) : v;
}

function namedEntry(v: Json): string | undefined {
  return isObject(v) && typeof v.name === 'string' ? v.name : undefined;
}

function mergeArray(target: Json[], patch: Json[], path: string[], ordered: OrderedArrays): Json[] {
  const out = target.map(copy);
  // Indexes by name and by canonical text, kept up to date as entries are appended, so that a
  // name or value repeated inside the patch itself is merged rather than duplicated.
  const byName = new Map<string, number>();
  const members = new Set<string>();
  out.forEach((v, i) => {
    const name = namedEntry(v);
    if (name !== undefined) {
      if (!byName.has(name)) byName.set(name, i);
    } else {
      members.add(canonicalJson(v));
    }
  });
  for (const entry of patch) {
    const name = namedEntry(entry);
    if (name !== undefined && isObject(entry)) {
      const at = byName.get(name);
      const existing = at === undefined ? undefined : out[at];
      if (at !== undefined && isObject(existing)) {
        out[at] = mergeObject(existing, entry, path, ordered);
      } else {
        byName.set(name, out.length);
        out.push(mergeObject({}, entry, path, ordered));
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
