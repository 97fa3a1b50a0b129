/**
 * How stored objects are shown: secrets and password hashes never leave in clear (config
 * reads), defaults added or trimmed, fields selected, x-path / x-etag for multi-object reads.
 */
import type { Json, JsonObject } from '../lib/json.js';
import type { ParsedQuery } from '../query/params.js';
import { applyDefaults } from '../model/defaults.js';
import type { ResourceDef } from '../model/resources.js';
import type { Schema } from '../model/schemas.js';
import { redactSecret } from '../secrets/secrets.js';
import { redactUser } from '../auth/index.js';

export function redact(def: ResourceDef, value: JsonObject): JsonObject {
  if (def.id === 'secret') return redactSecret(value);
  if (def.id === 'user') return redactUser(value);
  return value;
}

/** Applies with-defaults then fields; `where` is applied by the caller before this. */
export function shape(def: ResourceDef | undefined, value: JsonObject, q: ParsedQuery): Json {
  let v: JsonObject = value;
  if (def && q.withDefaults) v = applyDefaults(v, def.schema, q.withDefaults);
  return q.fields ? q.fields.apply(v) : v;
}

/**
 * Members /v1/state adds to an object's configuration (api/state.ts extras), so `fields` can
 * select them and still reject names that exist nowhere. Webhook state is open-ended
 * (counters, per-topic lag): no check there.
 */
const stateMembers: Readonly<Record<string, Record<string, Schema>>> = {
  deployment: {
    status: { type: 'object', properties: { 'selected-sites': { type: 'array', items: { type: 'string' } } } },
  },
};

/** `fields` checking for a state read of `def`; undefined when every name is accepted. */
export function knownInState(def: ResourceDef): ((path: string[]) => boolean) | undefined {
  if (def.id === 'webhook') return undefined;
  const extra = stateMembers[def.id];
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
