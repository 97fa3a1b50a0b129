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

/**
 * `obj` itself when nothing in it moves (most writes: no set out of order), else a copy of
 * what leads to what moved; members that did not move are shared, not copied.
 */
function orderObject(obj: JsonObject, path: string[], ordered: OrderedArrays, keyOf: ListKeys): JsonObject {
  let out: JsonObject | undefined;
  const keys = Object.keys(obj);
  for (const [i, k] of keys.entries()) {
    const was = obj[k] as Json;
    // Only objects and arrays can hold a set (a scalar needs no path).
    const v = was !== null && typeof was === 'object' ? orderValue(was, [...path, k], ordered, keyOf) : was;
    if (v === was && out === undefined) continue;
    if (out === undefined) {
      out = {};
      for (const earlier of keys.slice(0, i)) set(out, earlier, obj[earlier] as Json);
    }
    set(out, k, v);
  }
  return out ?? obj;
}

function set(out: JsonObject, k: string, v: Json): void {
  // A member named `__proto__` (legal JSON) stays data.
  if (k === '__proto__')
    Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
  else out[k] = v;
}

function orderValue(v: Json, path: string[], ordered: OrderedArrays, keyOf: ListKeys): Json {
  if (isObject(v)) return orderObject(v, path, ordered, keyOf);
  if (!Array.isArray(v)) return v;
  // Entries of an array add nothing to the path (as in merge.ts): `services/ports`.
  const entries = v.map((e) => orderValue(e, path, ordered, keyOf));
  const same = entries.every((e, i) => e === v[i]);
  if (ordered(path)) return same ? v : entries;
  const key = keyOf(path);
  const sortKey = (e: Json): string => {
    const k = isObject(e) ? e[key] : undefined;
    return typeof k === 'string' ? '0' + k : '1' + canonicalJson(e);
  };
  const keyed = entries.map((e) => ({ e, k: sortKey(e) }));
  keyed.sort((a, b) => (a.k < b.k ? -1 : a.k > b.k ? 1 : 0));
  return same && keyed.every((x, i) => x.e === v[i]) ? v : keyed.map((x) => x.e);
}
