/**
 * Schema validation with @cfworker/json-schema (compiled once per resource), its errors
 * translated into ApiErrors that name the field: "Cannot use X as Y: ...".
 * The 2020-12 validator reports a chain of errors per failure; only the leaves are kept,
 * except that a failed anyOf is one error listing what is allowed instead of one per branch.
 */
import { Validator, type OutputUnit } from '@cfworker/json-schema';
import { ApiError, type DetailFor } from '../lib/errors.js';
import type { JsonObject } from '../lib/json.js';
import type { ResourceDef } from './resources.js';
import type { Schema } from '../resources/schemas.js';
import { unescapeToken } from '../lib/json-pointer.js';

/**
 * A resource's validators: `all` reports every problem, `first` only one (used when listing
 * every one would overflow the validator's stack); `unique`: the member paths whose `uniqueItems`
 * we check ourselves, in linear time (the validator compares every pair: a list of 100,000
 * entries held the event loop for half a minute).
 */
type Validators = { all: Validator; first: () => Validator; unique: string[][] };
const validators = new Map<string, Validators>();

function validatorOf(def: ResourceDef): Validators {
  let v = validators.get(def.id);
  if (!v) {
    const unique: string[][] = [];
    const schema = withoutUnique(def.schema, [], unique) as ConstructorParameters<typeof Validator>[0];
    let first: Validator | undefined;
    const firstOnly = () => (first ??= new Validator(schema, '2020-12', true));
    v = { all: new Validator(schema, '2020-12', false), first: firstOnly, unique };
    validators.set(def.id, v);
  }
  return v;
}

/** A copy of `schema` without `uniqueItems` on members reached through `properties`; their paths go to `out`. */
function withoutUnique(schema: Schema, path: string[], out: string[][]): Schema {
  const props = schema.properties as Record<string, Schema> | undefined;
  if (!props && schema.uniqueItems !== true) return schema;
  const copy: Schema = { ...schema };
  if (copy.uniqueItems === true) {
    delete copy.uniqueItems;
    out.push(path);
  }
  if (props)
    copy.properties = Object.fromEntries(
      Object.entries(props).map(([k, s]) => [k, withoutUnique(s, [...path, k], out)]),
    );
  return copy;
}

/** Entries of one list beyond this are refused before any other check (each check is then bounded). */
export const maxListEntries = 10_000;
/** At most this many problems are listed for one object. */
export const maxProblems = 100;

/**
 * The first list of `value` (at any depth) longer than maxListEntries: its path and length. The
 * path is made on the way back from a hit only: every write walks its object here.
 */
function overlongList(value: unknown, depth = 0): { path: string[]; length: number } | undefined {
  if (typeof value !== 'object' || value === null || depth > 64) return undefined;
  if (Array.isArray(value)) {
    if (value.length > maxListEntries) return { path: [], length: value.length };
    for (let i = 0; i < value.length; i++) {
      const hit = overlongList(value[i], depth + 1);
      if (hit) return (hit.path.unshift(String(i)), hit);
    }
    return undefined;
  }
  for (const k in value) {
    const hit = overlongList((value as Record<string, unknown>)[k], depth + 1);
    if (hit) return (hit.path.unshift(k), hit);
  }
  return undefined;
}

/** The `uniqueItems` problems the validator no longer checks (validatorOf): one per list with an entry twice. */
function uniqueProblems(paths: readonly string[][], obj: JsonObject, xPath: string): ApiError[] {
  const out: ApiError[] = [];
  for (const path of paths) {
    const node = valueAtPath(obj, path);
    if (!Array.isArray(node)) continue;
    const seen = new Set<string>();
    const twice = node.find((e) => {
      const key = typeof e === 'string' ? `s${e}` : `j${JSON.stringify(e)}`;
      return seen.has(key) || !seen.add(key);
    });
    if (twice === undefined) continue;
    const field = path.join('/');
    out.push(
      new ApiError(
        'invalid-value',
        `Cannot use ${field} with ${JSON.stringify(twice)} twice: entries must be unique (${xPath})`,
        { code: 'schema-uniqueItems', path: field, 'x-path': xPath },
      ),
    );
  }
  return out;
}

/** The tokens of a JSON pointer written as a URI fragment ('#/labels/app~1tier' → ['labels', 'app/tier']). */
function locationTokens(location: string): string[] {
  return location
    .replace(/^#\/?/, '')
    .split('/')
    .filter((p) => p !== '')
    .map((p) => unescapeToken(decodeURIComponent(p)));
}

/** '#/headers/0/name' → 'headers[0]/name' (readable field path). */
export function fieldPath(instanceLocation: string): string {
  return locationTokens(instanceLocation).reduce(
    (acc, p) => (/^\d+$/.test(p) ? `${acc}[${p}]` : acc ? `${acc}/${p}` : p),
    '',
  );
}

/** The schema node a keywordLocation points into ('#/properties/a/pattern' → its parent). */
function schemaAt(root: Schema, keywordLocation: string): Schema | undefined {
  const parts = locationTokens(keywordLocation);
  parts.pop();
  let node: unknown = root;
  for (const p of parts) {
    if (typeof node !== 'object' || node === null) return undefined;
    node = (node as Record<string, unknown>)[p];
  }
  return typeof node === 'object' && node !== null ? (node as Schema) : undefined;
}

/** The detail code of each schema keyword that can fail; an unknown field is `unknown-field`. */
const schemaCodes: Partial<Record<string, DetailFor<'invalid-value'>>> = {
  false: 'unknown-field',
  required: 'schema-required',
  type: 'schema-type',
  pattern: 'schema-pattern',
  enum: 'schema-enum',
  const: 'schema-const',
  minimum: 'schema-minimum',
  maximum: 'schema-maximum',
  minLength: 'schema-minLength',
  maxLength: 'schema-maxLength',
  minItems: 'schema-minItems',
  maxItems: 'schema-maxItems',
  uniqueItems: 'schema-uniqueItems',
  minProperties: 'schema-minProperties',
  maxProperties: 'schema-maxProperties',
};

const chainKeywords = new Set([
  'properties',
  'items',
  'prefixItems',
  'additionalProperties',
  'propertyNames',
  'allOf',
  '$ref',
  'unevaluatedProperties',
]);

/** A number schema's bounds in words ('from 1 to 4096', 'greater than 0 and at most 1000000'). */
function boundsText(s: Schema): string {
  const { minimum: min, maximum: max, exclusiveMinimum: xMin, exclusiveMaximum: xMax } = s;
  if (min !== undefined && max !== undefined) return `from ${String(min)} to ${String(max)}`;
  const parts: string[] = [];
  if (min !== undefined) parts.push(`at least ${String(min)}`);
  if (xMin !== undefined) parts.push(`greater than ${String(xMin)}`);
  if (max !== undefined) parts.push(`at most ${String(max)}`);
  if (xMax !== undefined) parts.push(`less than ${String(xMax)}`);
  return parts.join(' and ');
}

/**
 * What a schema allows as a noun phrase ('an integer from 1 to 4096', '"auto"'); undefined
 * when there is no short one, as a phrase that leaves out a rule would mislead.
 */
function allowedText(s: Schema): string | undefined {
  if ('const' in s) return JSON.stringify(s.const);
  if (Array.isArray(s.enum)) return `one of ${s.enum.map((x) => JSON.stringify(x)).join(', ')}`;
  const bounds = boundsText(s);
  if (s.type === 'integer' || s.type === 'number' || (s.type === undefined && bounds !== '')) {
    return `${s.type === 'integer' ? 'an integer' : 'a number'}${bounds ? ` ${bounds}` : ''}`;
  }
  if (s.type === 'string' && s.minLength === undefined && s.maxLength === undefined)
    return typeof s.pattern === 'string' ? `a string matching ${s.pattern}` : 'a string';
  if (s.type === 'boolean') return 'true or false';
  return undefined;
}

/** 'a', 'a or b', 'a, b or c'. */
function orList(items: string[]): string {
  return items.length < 2 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} or ${items[items.length - 1]}`;
}

/** A translated schema error; `covers` is the keywordLocation prefix of the errors it stands for. */
type Described = { message: string; field: string; covers?: string };

/**
 * A failed anyOf as one error naming every allowed form; it `covers` the errors of its
 * branches (each one reports why the value is not that form, which says less than the list).
 * Undefined when a branch has no short phrase: its own errors then speak instead.
 */
function anyOfError(
  unit: OutputUnit,
  schema: Schema,
  shown: string,
  where: string,
  field: string,
): Described | undefined {
  const allowed = (Array.isArray(schema.anyOf) ? (schema.anyOf as Schema[]) : []).map(allowedText);
  if (allowed.length === 0 || allowed.some((a) => a === undefined)) return undefined;
  return {
    field,
    message: `Cannot use ${shown} as ${where}: it must be ${orList(allowed as string[])}`,
    covers: `${unit.keywordLocation}/`,
  };
}

function describe(unit: OutputUnit, root: Schema, value: unknown, secret: boolean): Described | undefined {
  const field = fieldPath(unit.instanceLocation);
  const where = field || 'the object';
  const schema = schemaAt(root, unit.keywordLocation) ?? {};
  const shown = secret ? '(secret)' : (JSON.stringify(value)?.slice(0, 80) ?? 'undefined');
  switch (unit.keyword) {
    case 'false': {
      const parent = field.includes('/') ? field.slice(0, field.lastIndexOf('/')) : '';
      const member = field.slice(field.lastIndexOf('/') + 1);
      return {
        field,
        message: `Cannot accept field ${JSON.stringify(member)}${parent ? ` in ${parent}` : ''}: unknown field`,
      };
    }
    case 'required': {
      const m = /"([^"]+)"/.exec(unit.error);
      const missing = m?.[1] ?? '?';
      const f = field ? `${field}/${missing}` : missing;
      return { field: f, message: `Missing required field ${f}` };
    }
    case 'type':
      return { field, message: `Cannot use ${shown} as ${where}: expected ${String(schema.type)}` };
    case 'pattern':
      return { field, message: `Cannot use ${shown} as ${where}: it must match ${String(schema.pattern)}` };
    case 'enum':
      return {
        field,
        message: `Cannot use ${shown} as ${where}: allowed values are ${(schema.enum as unknown[]).map((x) => JSON.stringify(x)).join(', ')}`,
      };
    case 'const':
      return {
        field,
        message: `Cannot use ${shown} as ${where}: the only allowed value is ${JSON.stringify(schema.const)}`,
      };
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum':
      return {
        field,
        message: `Cannot use ${shown} as ${where}: it must be ${allowedText(schema) ?? boundsText(schema)}`,
      };
    case 'anyOf':
      return anyOfError(unit, schema, shown, where, field);
    case 'minLength':
      return {
        field,
        message: `Cannot use ${shown} as ${where}: it must not be shorter than ${String(schema.minLength)}`,
      };
    case 'maxLength':
      return {
        field,
        message: `Cannot use a value of ${(value as string).length} characters as ${where}: at most ${String(schema.maxLength)}`,
      };
    case 'minItems':
      return {
        field,
        message: `Cannot use ${shown} as ${where}: it needs at least ${String(schema.minItems)} entries`,
      };
    case 'maxItems':
      return {
        field,
        message: `Cannot use ${shown} as ${where}: it allows at most ${String(schema.maxItems)} entries`,
      };
    case 'uniqueItems':
      return { field, message: `Cannot use ${shown} as ${where}: entries must be unique` };
    case 'minProperties':
    case 'maxProperties': {
      // The members to choose from are those not required (a variable's name goes with its one source).
      const required = new Set(Array.isArray(schema.required) ? (schema.required as string[]) : []);
      const choices = Object.keys((schema.properties as object | undefined) ?? {}).filter((k) => !required.has(k));
      const beside = required.size > 0 ? ` beside ${[...required].join(', ')}` : '';
      return { field, message: `Cannot use ${shown} as ${where}: give exactly one of ${choices.join(', ')}${beside}` };
    }
    default:
      if (chainKeywords.has(unit.keyword)) return undefined;
      return { field, message: `Cannot use ${shown} as ${where}: ${unit.error}` };
  }
}

function valueAt(obj: unknown, instanceLocation: string): unknown {
  return valueAtPath(obj, locationTokens(instanceLocation));
}

/** The value at a path of member names (undefined where there is none). */
function valueAtPath(obj: unknown, path: readonly string[]): unknown {
  let node = obj;
  for (const p of path) {
    if (typeof node !== 'object' || node === null) return undefined;
    node = (node as Record<string, unknown>)[p];
  }
  return node;
}

/**
 * The members of `obj` that reads never show as written (a user's password, a secret's data:
 * what the resource's `redact` changes or drops): an error about them says `(secret)`, never the
 * value, so it cannot reach a reply, a log line or an audit record in clear.
 */
function secretMembers(def: ResourceDef, obj: JsonObject): Set<string> {
  if (!def.redact) return new Set();
  const shown = def.redact(obj);
  return new Set(Object.keys(obj).filter((k) => JSON.stringify(obj[k]) !== JSON.stringify(shown[k])));
}

/** Every schema problem of `obj`, each naming its field (empty when valid). */
export function schemaErrors(def: ResourceDef, obj: JsonObject, xPath: string): ApiError[] {
  const long = overlongList(obj);
  if (long) {
    const field = long.path.join('/');
    return [
      new ApiError(
        'invalid-value',
        `Cannot use a list of ${long.length} entries as ${field}: at most ${maxListEntries} (${xPath})`,
        { code: 'schema-maxItems', path: field, 'x-path': xPath },
      ),
    ];
  }
  const v = validatorOf(def);
  const unique = uniqueProblems(v.unique, obj, xPath);
  let result;
  try {
    result = v.all.validate(obj);
  } catch (err) {
    // Too many problems for the validator to gather (its stack overflows): name the first.
    if (!(err instanceof RangeError)) throw err;
    result = v.first().validate(obj);
  }
  if (result.valid) return unique;
  const seen = new Set<string>();
  const covered: string[] = [];
  const out: ApiError[] = [];
  const secret = secretMembers(def, obj);
  // An anyOf error comes before those of its branches (the validator puts it first).
  for (const unit of result.errors) {
    if (covered.some((prefix) => unit.keywordLocation.startsWith(prefix))) continue;
    const top = decodeURIComponent(unit.instanceLocation.split('/')[1] ?? '')
      .replace(/~1/g, '/')
      .replace(/~0/g, '~');
    const d = describe(unit, def.schema, valueAt(obj, unit.instanceLocation), secret.has(top));
    if (d?.covers) covered.push(d.covers);
    if (!d || seen.has(d.message)) continue;
    seen.add(d.message);
    out.push(
      new ApiError('invalid-value', `${d.message} (${xPath})`, {
        code: schemaCodes[unit.keyword] ?? 'schema-invalid',
        path: d.field,
        'x-path': xPath,
      }),
    );
    if (out.length >= maxProblems) break;
  }
  return [...unique, ...out].slice(0, maxProblems);
}
