/**
 * Semantic checks a JSON Schema cannot express, run at write time so a bad pattern,
 * template or label expression is a 400 then, never a failure per message later: the
 * duplicate keys of keyed lists and a rollout's waves (resources/rollout.ts) here, the rest in
 * each resource's own `check` (resources/).
 */
import { ApiError } from '../lib/errors.js';
import type { JsonObject } from '../lib/json.js';
import { fieldPath, schemaErrors } from './validate.js';
import { duplicateKeys } from './merge.js';
import { listRulesOf, type ResourceDef } from './resources.js';
import type { WriteContext } from '../resources/module.js';
import { rolloutErrors } from '../resources/rollout.js';

/**
 * Keyed lists (lists of objects merged by `name`, or `host-id` for a site's `hosts`): a key
 * given twice in one list, naming both positions as JSON pointers into `obj`.
 */
export function duplicateKeyErrors(def: ResourceDef, obj: JsonObject, xPath: string, where = ''): ApiError[] {
  const rules = listRulesOf(def);
  return duplicateKeys(obj, rules.ordered, rules.keyOf).map(
    (d) =>
      new ApiError(
        'invalid-value',
        `Cannot use ${d.key} ${JSON.stringify(d.value)} twice in ${d.list}${where ? ` ${where}` : ''}: at ${d.first} and ${d.second} (${xPath})`,
        {
          code: 'duplicate-key',
          path: fieldPath(`#${d.second}/${d.key}`),
          positions: [d.first, d.second],
          'x-path': xPath,
        },
      ),
  );
}

/**
 * Every problem of one object as a write would find it today: its schema, then (when the schema
 * holds) its compiled form and the resource's own checks. Returns the compiled form too, which a
 * commit keeps. The transaction checks each written object so; `validate` on a list GET checks
 * each stored one.
 */
export function objectProblems(
  def: ResourceDef,
  obj: JsonObject,
  xPath: string,
  ctx: WriteContext,
): { errors: ApiError[]; compiled: unknown } {
  const schemaProblems = schemaErrors(def, obj, xPath);
  const compiled = schemaProblems.length === 0 ? def.compile?.(obj, ctx) : undefined;
  return { errors: [...schemaProblems, ...semanticErrors(def, obj, xPath, ctx, compiled)], compiled };
}

export function semanticErrors(
  def: ResourceDef,
  obj: JsonObject,
  xPath: string,
  ctx: WriteContext,
  compiled: unknown,
): ApiError[] {
  return [
    ...duplicateKeyErrors(def, obj, xPath),
    ...rolloutErrors(obj, xPath),
    ...(def.check?.(obj, xPath, ctx, compiled) ?? []),
  ];
}
