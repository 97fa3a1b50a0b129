/**
 * The canonical order of an object's unordered arrays (CONTRACT §5 "Arrays": every array but
 * the ordered ones is a set, lists of objects keyed by `name` or their list key), applied to
 * what a write stores: keyed entries sorted by key, other entries by their canonical JSON,
 * at any depth. Two writes that differ only in the order of a set store the same content, so
 * the object's ETag (of the stored content) does not change, while reordering an ordered list
 * (`headers`, `management-ipv4-access-list`, policy `rules`) still does.
 */
import { canonicalJson, isObject, type Json, type JsonObject } from '../lib/json.js';
import type { ListKeys, OrderedArrays } from './merge.js';

export function canonicalOrder(obj: JsonObject, ordered: OrderedArrays, keyOf: ListKeys): JsonObject {
  return orderObject(obj, [], ordered, keyOf);
}

function orderObject(obj: JsonObject, path: string[], ordered: OrderedArrays, keyOf: ListKeys): JsonObject {
  const out: JsonObject = {};
  for (const k of Object.keys(obj)) {
    const v = orderValue(obj[k] as Json, [...path, k], ordered, keyOf);
    // A member named `__proto__` (legal JSON) stays data.
    if (k === '__proto__')
      Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
    else out[k] = v;
  }
  return out;
}

function orderValue(v: Json, path: string[], ordered: OrderedArrays, keyOf: ListKeys): Json {
  if (isObject(v)) return orderObject(v, path, ordered, keyOf);
  if (!Array.isArray(v)) return v;
  // Entries of an array add nothing to the path (as in merge.ts): `services/ports`.
  const entries = v.map((e) => orderValue(e, path, ordered, keyOf));
  if (ordered(path)) return entries;
  const key = keyOf(path);
  const sortKey = (e: Json): string => {
    const k = isObject(e) ? e[key] : undefined;
    return typeof k === 'string' ? '0' + k : '1' + canonicalJson(e);
  };
  const keyed = entries.map((e) => ({ e, k: sortKey(e) }));
  keyed.sort((a, b) => (a.k < b.k ? -1 : a.k > b.k ? 1 : 0));
  return keyed.map((x) => x.e);
}
