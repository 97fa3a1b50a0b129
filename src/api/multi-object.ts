/**
 * Multi-object bodies of PATCH/POST /v1/config: a JSON list or YAML documents of
 * objects with x-path, x-operation, x-etag, x-json-patch and x-tenant → transaction changes,
 * checked before anything is read.
 */
import { ApiError } from '../lib/errors.js';
import { isObject, jsonKind, type Json, type JsonObject } from '../lib/json.js';
import { ops, type Change, type Op } from '../model/transaction.js';
import { parseJson, parseYaml } from './body.js';

const PREFIX = '/v1/config';

export function multiObjectChanges(docs: Json[], defaultOp: Op): Change[] {
  const only = docs.length === 1 ? docs[0] : undefined;
  // A lone scalar is the wrong body, not a list whose first item is wrong.
  if (only !== undefined && !isObject(only) && !Array.isArray(only))
    throw new ApiError(
      'invalid-document',
      `Cannot use ${jsonKind(only)} as the body: it must be a list of objects, each with x-path, or one such object`,
      { code: 'not-an-object' },
    );
  const items: Json[] = Array.isArray(only) ? only : docs;
  if (items.length === 0)
    throw new ApiError('invalid-document', 'Cannot apply an empty change: send a list of objects with x-path', {
      code: 'empty',
    });
  return items.map((item, i) => {
    const where = `item ${i + 1}`;
    if (!isObject(item))
      throw new ApiError(
        'invalid-document',
        `Cannot use ${where}: it is ${jsonKind(item)}, not an object with x-path`,
        { code: 'not-an-object', index: i },
      );
    const xPath = item['x-path'];
    if (typeof xPath !== 'string')
      throw new ApiError('invalid-value', `Missing x-path in ${where}`, { code: 'missing-x-path', index: i });
    if (!xPath.startsWith(`${PREFIX}/`))
      throw new ApiError(
        'invalid-value',
        `Cannot use x-path ${JSON.stringify(xPath)} in ${where}: it must lie under ${PREFIX}/`,
        { code: 'x-path-outside', index: i, 'x-path': xPath },
      );
    const rawOp = item['x-operation'] ?? defaultOp;
    if (typeof rawOp !== 'string' || !(ops as readonly string[]).includes(rawOp)) {
      throw new ApiError(
        'invalid-value',
        `Cannot use x-operation ${JSON.stringify(rawOp)} in ${where} (${xPath}): use one of ${ops.join(', ')}`,
        { code: 'bad-x-operation', index: i, 'x-path': xPath },
      );
    }
    const op = rawOp as Op;
    const tenant = item['x-tenant'];
    if (tenant !== undefined && (typeof tenant !== 'string' || tenant === ''))
      throw new ApiError('invalid-value', `Cannot use x-tenant in ${where} (${xPath}): it must be a tenant name`, {
        code: 'bad-x-tenant',
        index: i,
        'x-path': xPath,
      });
    const etag = item['x-etag'];
    if (etag !== undefined && typeof etag !== 'string')
      throw new ApiError('invalid-value', `Cannot use x-etag in ${where} (${xPath}): it must be a string`, {
        code: 'bad-x-etag',
        index: i,
        'x-path': xPath,
      });
    const value: JsonObject = {};
    for (const [k, v] of Object.entries(item)) {
      if (k === 'x-path' || k === 'x-operation' || k === 'x-etag' || k === 'x-json-patch' || k === 'x-tenant') continue;
      if (k.startsWith('x-'))
        throw new ApiError('invalid-value', `Cannot use field ${k} in ${where} (${xPath}): unknown x- field`, {
          code: 'x-field',
          index: i,
          'x-path': xPath,
        });
      value[k] = v;
    }
    const path = xPath.slice(PREFIX.length + 1).replace(/\/+$/, '');
    const change: Change = { path, op };
    // An ETag is a quoted string ("abc", as GET answers it); the bare value (abc) is taken as it.
    if (etag !== undefined)
      change.ifMatch = /^(W\/)?"/.test(etag.trim()) || etag.trim() === '*' ? etag : `"${etag.trim()}"`;
    if (typeof tenant === 'string') change.tenant = tenant;
    if (item['x-json-patch'] !== undefined) {
      if (op !== 'update')
        throw new ApiError(
          'invalid-value',
          `Cannot use x-json-patch with x-operation ${op} in ${where} (${xPath}): only update takes a JSON Patch`,
          { code: 'x-json-patch-op', index: i, 'x-path': xPath },
        );
      if (Object.keys(value).length > 0)
        throw new ApiError(
          'invalid-value',
          `Cannot use x-json-patch together with fields in ${where} (${xPath}): give one or the other`,
          { code: 'x-json-patch-fields', index: i, 'x-path': xPath },
        );
      const patch = item['x-json-patch'];
      // The operations may also come as text (JSON or YAML), as some clients embed them.
      change.jsonPatch = typeof patch === 'string' ? patchFromText(patch, where, xPath, i) : patch;
    } else if (op !== 'delete' && op !== 'remove') change.value = value;
    return change;
  });
}

function patchFromText(text: string, where: string, xPath: string, index: number): Json {
  try {
    const docs = text.trimStart().startsWith('[') ? [parseJson(text)] : parseYaml(text);
    if (docs.length === 1) return docs[0] as Json;
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    throw new ApiError('invalid-patch', `Cannot read x-json-patch of ${where} (${xPath}): ${err.message}`, {
      ...err.info,
      code: 'bad-x-json-patch',
      index,
      'x-path': xPath,
    });
  }
  throw new ApiError('invalid-patch', `Cannot read x-json-patch of ${where} (${xPath}): give one list of operations`, {
    code: 'bad-x-json-patch',
    index,
    'x-path': xPath,
  });
}
