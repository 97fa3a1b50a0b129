/**
 * `with-defaults`: the schema's `default`s, applied to an object as read.
 * report-all: every default in effect is shown; trim: values equal to their default are
 * left out; explicit: the object as written.
 */
import { deepEqual, isObject, type Json, type JsonObject } from '../lib/json.js';
import type { Schema } from './schemas.js';

export type WithDefaults = 'report-all' | 'trim' | 'explicit';

function props(schema: Schema): Record<string, Schema> | undefined {
  const p = schema.properties;
  return typeof p === 'object' && p !== null ? (p as Record<string, Schema>) : undefined;
}

function walk(value: JsonObject, schema: Schema, mode: 'report-all' | 'trim'): JsonObject {
  const properties = props(schema);
  if (!properties) return value;
  const out: JsonObject = { ...value };
  for (const [name, sub] of Object.entries(properties)) {
    const v = out[name];
    if (v === undefined) {
      if (mode === 'report-all' && sub.default !== undefined) out[name] = sub.default as Json;
      continue;
    }
    if (mode === 'trim' && sub.default !== undefined && deepEqual(v, sub.default)) {
      delete out[name];
      continue;
    }
    if (isObject(v)) out[name] = walk(v, sub, mode);
    else if (Array.isArray(v) && typeof sub.items === 'object' && sub.items !== null) {
      const items = sub.items as Schema;
      out[name] = v.map((x) => (isObject(x) ? walk(x, items, mode) : x));
    }
  }
  return out;
}

export function applyDefaults(value: JsonObject, schema: Schema, mode: WithDefaults): JsonObject {
  return mode === 'explicit' ? value : walk(value, schema, mode);
}
