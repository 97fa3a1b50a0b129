/**
 * How stored objects are shown: secrets and password hashes never leave in clear (config
 * reads), defaults added or trimmed, fields selected, x-path / x-etag for multi-object reads.
 */
import type { Json, JsonObject } from '../lib/json.js';
import type { ParsedQuery } from '../query/params.js';
import { applyDefaults } from '../model/defaults.js';
import type { ResourceDef } from '../model/resources.js';
import type { Schema } from '../resources/schemas.js';

/** What a configuration read shows of a stored object (the resource's `redact`). */
export function redact(def: ResourceDef, value: JsonObject): JsonObject {
  return def.redact ? def.redact(value) : value;
}

/** Applies with-defaults then fields; `where` is applied by the caller before this. */
export function shape(def: ResourceDef | undefined, value: JsonObject, q: ParsedQuery): Json {
  let v: JsonObject = value;
  if (def && q.withDefaults) v = applyDefaults(v, def.schema, q.withDefaults);
  return q.fields ? q.fields.apply(v) : v;
}

/**
 * `fields` checking for a state read of `def`. The members /v1/state adds to an object's configuration are the resource's `stateMembers`.
 */
export function knownInState(def: ResourceDef): ((path: string[]) => boolean) | undefined {
  const extra = def.stateMembers;
  if (!extra) return knownIn(def.schema);
  const props = (def.schema.properties ?? {}) as Record<string, Schema>;
  return knownIn({ ...def.schema, properties: { ...props, ...extra } });
}

/** Whether `path` (member names) exists in a schema, for `fields` checking. */
export function knownIn(schema: Schema): (path: string[]) => boolean {
  return (path) => {
    let node: Schema | undefined = schema;
    for (const name of path) {
      while (node && node.type === 'array' && typeof node.items === 'object') node = node.items as Schema;
      const props = node?.properties as Record<string, Schema> | undefined;
      if (props?.[name]) {
        node = props[name];
        continue;
      }
      // Maps (labels, data) admit any member name.
      if (node && typeof node.additionalProperties === 'object') {
        node = node.additionalProperties as Schema;
        continue;
      }
      return false;
    }
    return true;
  };
}
