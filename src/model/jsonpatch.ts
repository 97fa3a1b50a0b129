/**
 * JSON Patch (RFC 6902) on fast-json-patch: add, remove, replace and test are applied by the
 * library; this file is the one place that calls it. On top of it:
 * - `safe-remove`: remove; a missing target (or a missing parent) is not an error.
 * - `safe-replace`: replace; a missing target is created with add semantics, and missing
 *   intermediate objects are created too, like `mkdir -p` (an intermediate that exists but is
 *   not a container, or a missing array element on the way, is still an error).
 * `copy` and `move` are not supported: a patch using them anywhere is rejected as
 * `unsupported-operation`, whatever else is wrong with it, because that is the useful answer.
 *
 * Every operation's shape is checked before anything is applied, and each location is
 * resolved here before the library runs, because the library accepts an array index with a
 * leading zero ('01'), counts inherited members (`constructor`) as present, and reports `test`
 * of a missing member as a failed test rather than a missing target. The library's errors
 * (`PatchError`, whose message holds the whole document) are translated into our codes with the
 * op index and path; no message names a value of the document.
 *
 * The patch applies to one private copy of the document whose objects have no prototype, so a
 * member named `__proto__` is plain data for the library too; the result is converted back to
 * ordinary objects. All or nothing, and the input is never touched.
 */
import fastJsonPatch, { type Operation } from 'fast-json-patch';
import { ApiError } from '../lib/errors.js';
import { isObject, type Json, type JsonObject } from '../lib/json.js';
import { arrayIndex, formatPointer, parsePointer } from '../lib/json-pointer.js';

const { applyOperation, JsonPatchError } = fastJsonPatch;

type ValueOpName = 'add' | 'replace' | 'safe-replace' | 'test';
type RemoveOpName = 'remove' | 'safe-remove';
/** One union member per op name, so that checking `op` narrows to the right shape. */
type JsonPatchOp =
  | { [K in ValueOpName]: { op: K; path: string; tokens: string[]; value: Json } }[ValueOpName]
  | { [K in RemoveOpName]: { op: K; path: string; tokens: string[] } }[RemoveOpName];

/** Codes in `error-info` of an `invalid-patch` error. */
type PatchErrorCode =
  | 'bad-patch' // the body is not an array of operations
  | 'bad-op' // an operation lacks op/path/value or names an unknown op
  | 'bad-pointer' // path is not an RFC 6901 pointer, or names what cannot be changed
  | 'bad-value' // value is not JSON data
  | 'bad-index' // an array index that is malformed or beyond the end
  | 'missing-target' // the location (or its parent) does not exist
  | 'test-failed';

const withValue = new Set(['add', 'replace', 'safe-replace', 'test']);
const withoutValue = new Set(['remove', 'safe-remove']);
const unsupported = new Set(['copy', 'move']);

function opError(code: PatchErrorCode, index: number, path: string | undefined, reason: string): ApiError {
  const where = path === undefined ? `operation ${index}` : `operation ${index} (path ${JSON.stringify(path)})`;
  const info = path === undefined ? { code, 'op-index': index } : { code, 'op-index': index, path };
  return new ApiError('invalid-patch', `Cannot apply JSON Patch ${where}: ${reason}`, info);
}

/** Checks the shape of every operation before anything is applied. */
function parseJsonPatch(ops: unknown): JsonPatchOp[] {
  if (!Array.isArray(ops)) {
    throw new ApiError('invalid-patch', 'A JSON Patch must be an array of operations', { code: 'bad-patch' });
  }
  const bad = ops.findIndex((o) => isObject(o) && typeof o.op === 'string' && unsupported.has(o.op));
  if (bad >= 0) {
    const op = String((ops[bad] as JsonObject).op);
    throw new ApiError(
      'unsupported-operation',
      `JSON Patch operation ${bad}: '${op}' is not supported (use add, remove, replace, test, safe-remove, safe-replace)`,
      {
        code: 'unsupported-op',
        'op-index': bad,
        op,
      },
    );
  }
  return ops.map((o, i) => parseOp(o, i));
}

function parseOp(o: unknown, i: number): JsonPatchOp {
  if (!isObject(o)) throw opError('bad-op', i, undefined, 'an operation must be an object with op and path');
  const { op, path } = o;
  if (typeof op !== 'string' || !(withValue.has(op) || withoutValue.has(op))) {
    throw opError(
      'bad-op',
      i,
      undefined,
      `op must be one of add, remove, replace, test, safe-remove, safe-replace, not ${JSON.stringify(op ?? null)}`,
    );
  }
  if (typeof path !== 'string') throw opError('bad-op', i, undefined, `'${op}' needs a path (a JSON pointer string)`);
  const tokens = parsePointer(path);
  if (!tokens)
    throw opError(
      'bad-pointer',
      i,
      path,
      "a JSON pointer is empty or starts with '/', and '~' is only written as ~0 or ~1",
    );
  if (op === 'add' || op === 'replace' || op === 'safe-replace' || op === 'test') {
    if (!Object.hasOwn(o, 'value')) throw opError('bad-op', i, path, `'${op}' needs a value (null is allowed)`);
    const value: unknown = o.value;
    if (!isJson(value)) throw opError('bad-value', i, path, 'value must be JSON data');
    return { op, path, tokens, value };
  }
  if (op === 'remove' || op === 'safe-remove') return { op, path, tokens };
  throw opError('bad-op', i, path, `unknown op ${op}`);
}

function isJson(v: unknown): v is Json {
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return true;
  if (typeof v === 'number') return Number.isFinite(v);
  if (Array.isArray(v)) return v.every(isJson);
  if (typeof v !== 'object') return false;
  const proto: unknown = Object.getPrototypeOf(v);
  return (proto === Object.prototype || proto === null) && Object.values(v).every(isJson);
}

/** Applies `ops` (validated first) to a copy of `doc`; returns the new document or throws ApiError. */
export function applyJsonPatch(doc: Json, ops: unknown): Json {
  const parsed = parseJsonPatch(ops);
  let root = bare(doc);
  parsed.forEach((op, i) => {
    root = applyOp(root, op, i);
  });
  return plain(root);
}

/** A deep copy whose objects have no prototype: no inherited member can be mistaken for data. */
function bare(v: Json): Json {
  if (Array.isArray(v)) return v.map(bare);
  if (!isObject(v)) return v;
  const out = Object.create(null) as JsonObject;
  for (const k of Object.keys(v)) out[k] = bare(v[k] as Json);
  return out;
}

/** Back to ordinary objects; a member named __proto__ stays data, not the prototype. */
function plain(v: Json): Json {
  if (Array.isArray(v)) return v.map(plain);
  if (!isObject(v)) return v;
  const out: JsonObject = {};
  for (const k of Object.keys(v)) {
    const value = plain(v[k] as Json);
    if (k === '__proto__')
      Object.defineProperty(out, k, { value, enumerable: true, writable: true, configurable: true });
    else out[k] = value;
  }
  return out;
}

type Fail = (code: PatchErrorCode, reason: string) => ApiError;
/** Where an operation lands: `exists` says whether the target is there now. */
type Target = { exists: boolean };

function applyOp(root: Json, op: JsonPatchOp, i: number): Json {
  const fail: Fail = (code, reason) => opError(code, i, op.path, reason);
  if (op.tokens.length === 0 && (op.op === 'remove' || op.op === 'safe-remove'))
    throw fail('bad-pointer', 'the whole document cannot be removed');
  const target = locate(root, op, fail);
  switch (op.op) {
    case 'safe-remove':
      return target?.exists ? run(root, { op: 'remove', path: op.path }, i, fail) : root;
    case 'safe-replace':
      return run(root, { op: target?.exists ? 'replace' : 'add', path: op.path, value: bare(op.value) }, i, fail);
    case 'add':
      return run(root, { op: 'add', path: op.path, value: bare(op.value) }, i, fail);
    case 'remove':
      if (!target?.exists) throw fail('missing-target', 'the target does not exist');
      return run(root, { op: 'remove', path: op.path }, i, fail);
    case 'replace':
      if (!target?.exists) throw fail('missing-target', 'the target does not exist');
      return run(root, { op: 'replace', path: op.path, value: bare(op.value) }, i, fail);
    case 'test':
      // The library compares with value.hasOwnProperty, so value keeps its ordinary prototype.
      if (!target?.exists) throw fail('missing-target', 'the target does not exist');
      return run(root, { op: 'test', path: op.path, value: op.value }, i, fail);
  }
}

/** One operation by the library, its errors translated. */
function run(root: Json, operation: Operation, i: number, fail: Fail): Json {
  try {
    return applyOperation(root, operation, true, true, false, i).newDocument as Json;
  } catch (err) {
    if (!(err instanceof JsonPatchError)) throw err;
    const [code, reason] = translated[err.name] ?? ['bad-op', 'the operation cannot be applied'];
    throw fail(code, reason);
  }
}

/** fast-json-patch error names → our code and a reason that names no value of the document. */
const translated: Record<string, [PatchErrorCode, string]> = {
  TEST_OPERATION_FAILED: ['test-failed', 'the value there is not equal to value'],
  OPERATION_PATH_UNRESOLVABLE: ['missing-target', 'the location (or its parent) does not exist'],
  OPERATION_PATH_CANNOT_ADD: ['missing-target', 'the parent of the target does not exist'],
  OPERATION_PATH_ILLEGAL_ARRAY_INDEX: ['bad-index', 'not an array index (digits, no leading zero)'],
  OPERATION_VALUE_OUT_OF_BOUNDS: ['bad-index', 'the index is beyond the end of the array'],
  OPERATION_VALUE_REQUIRED: ['bad-op', 'the operation needs a value'],
  OPERATION_VALUE_CANNOT_CONTAIN_UNDEFINED: ['bad-value', 'value must be JSON data'],
};

function kindOf(v: Json): string {
  return v === null ? 'null' : typeof v;
}

/**
 * Resolves the operation's location: checks every array index on the way, creates missing
 * objects on the way for safe-replace; undefined only for a safe-remove with nothing to remove.
 */
function locate(root: Json, op: JsonPatchOp, fail: Fail): Target | undefined {
  const { tokens } = op;
  const last = tokens[tokens.length - 1];
  if (last === undefined) return { exists: true };
  let node: Json = root;
  for (const [depth, token] of tokens.slice(0, -1).entries()) {
    const at = formatPointer(tokens.slice(0, depth)) || 'the document';
    let next: Json | undefined;
    if (Array.isArray(node)) {
      const index = arrayIndex(token);
      if (index === undefined) throw fail('bad-index', `${JSON.stringify(token)} is not an array index of ${at}`);
      next = node[index];
    } else if (isObject(node)) {
      next = Object.hasOwn(node, token) ? node[token] : undefined;
      if (next === undefined && op.op === 'safe-replace') {
        next = Object.create(null) as JsonObject;
        node[token] = next;
      }
    } else {
      if (op.op === 'safe-remove') return undefined;
      throw fail('missing-target', `${at} is ${kindOf(node)}, which has no member ${JSON.stringify(token)}`);
    }
    if (next === undefined) {
      if (op.op === 'safe-remove') return undefined;
      throw fail('missing-target', `${formatPointer(tokens.slice(0, depth + 1))} does not exist`);
    }
    node = next;
  }
  if (isObject(node)) return { exists: Object.hasOwn(node, last) };
  if (!Array.isArray(node)) {
    if (op.op === 'safe-remove') return undefined;
    throw fail('missing-target', `the parent of the target is ${kindOf(node)}, not an object or array`);
  }
  const appends = op.op === 'add' || op.op === 'safe-replace';
  if (last === '-') {
    if (appends || op.op === 'safe-remove') return { exists: false };
    throw fail('missing-target', `'-' (after the last element) has no value to ${op.op}`);
  }
  const index = arrayIndex(last);
  if (index === undefined)
    throw fail('bad-index', `${JSON.stringify(last)} is not an array index (digits, no leading zero)`);
  if (appends && index > node.length)
    throw fail('bad-index', `index ${index} is beyond the end of the array (length ${node.length})`);
  if (!appends && index >= node.length && op.op !== 'safe-remove')
    throw fail('missing-target', `index ${index} does not exist (array length ${node.length})`);
  return { exists: index < node.length };
}
