/**
 * JSON Patch (RFC 6902, seed 4.5): add, remove, replace, test, plus two extensions:
 * - `safe-remove`: remove; a missing target (or a missing parent) is not an error.
 * - `safe-replace`: replace; a missing target is created with add semantics, and missing
 *   intermediate objects are created too, like `mkdir -p` (an intermediate that exists but is
 *   not a container, or a missing array element on the way, is still an error).
 * `copy` and `move` are not supported (seed 7): a patch using them anywhere is rejected as
 * `unsupported-operation`, whatever else is wrong with it, because that is the useful answer.
 *
 * Own implementation rather than fast-json-patch: its PatchError embeds the whole document,
 * and we need our own error codes with the op index and path in `error-info`.
 * The whole patch applies to one private copy of the document, so it is all or nothing and the
 * input is never touched.
 */
import { ApiError } from '../errors.js';
import { clone, deepEqual, isObject, type Json, type JsonObject } from '../json.js';

type ValueOpName = 'add' | 'replace' | 'safe-replace' | 'test';
type RemoveOpName = 'remove' | 'safe-remove';
/** One union member per op name, so that checking `op` narrows to the right shape. */
export type JsonPatchOp =
  | { [K in ValueOpName]: { op: K; path: string; tokens: string[]; value: Json } }[ValueOpName]
  | { [K in RemoveOpName]: { op: K; path: string; tokens: string[] } }[RemoveOpName];

/** Codes in `error-info.code` of an `invalid-patch` error. */
export type PatchErrorCode =
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

/** RFC 6901: '' is the whole document; otherwise '/'-separated tokens with ~1 = '/', ~0 = '~'. */
export function parsePointer(pointer: string): string[] | undefined {
  if (pointer === '') return [];
  if (!pointer.startsWith('/') || /~(?![01])/.test(pointer)) return undefined;
  return pointer
    .slice(1)
    .split('/')
    .map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
}

/** Checks the shape of every operation before anything is applied. */
export function parseJsonPatch(ops: unknown): JsonPatchOp[] {
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
  let root = clone(doc);
  parsed.forEach((op, i) => {
    root = applyOp(root, op, i);
  });
  return root;
}

type Container = Json[] | JsonObject;

/** Digits without leading zeros (RFC 6901 array index), or undefined. */
function arrayIndex(token: string): number | undefined {
  return /^(0|[1-9][0-9]*)$/.test(token) ? Number(token) : undefined;
}

function copy(v: Json): Json {
  return typeof v === 'object' && v !== null ? clone(v) : v;
}

function setMember(obj: JsonObject, key: string, value: Json): void {
  // A member named __proto__ is ordinary JSON data and must not become the prototype.
  if (key === '__proto__')
    Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  else obj[key] = value;
}

function applyOp(root: Json, op: JsonPatchOp, i: number): Json {
  const fail = (code: PatchErrorCode, reason: string) => opError(code, i, op.path, reason);
  const last = op.tokens[op.tokens.length - 1];
  if (last === undefined) {
    // The pointer '' is the whole document.
    if (op.op === 'test') {
      if (!deepEqual(root, op.value)) throw fail('test-failed', 'the document is not equal to value');
      return root;
    }
    if (op.op === 'remove' || op.op === 'safe-remove')
      throw fail('bad-pointer', 'the whole document cannot be removed');
    return copy(op.value);
  }
  const parent = walk(root, op, fail);
  if (parent === undefined) return root; // safe-remove below a missing parent
  if (Array.isArray(parent)) applyToArray(parent, last, op, fail);
  else applyToObject(parent, last, op, fail);
  return root;
}

type Fail = (code: PatchErrorCode, reason: string) => ApiError;

/** The container holding the target; undefined only for a safe-remove whose parent is missing. */
function walk(root: Json, op: JsonPatchOp, fail: Fail): Container | undefined {
  let node: Json = root;
  const parents = op.tokens.slice(0, -1);
  for (const [depth, token] of parents.entries()) {
    const at = pointerOf(op.tokens.slice(0, depth));
    let next: Json | undefined;
    if (Array.isArray(node)) {
      const index = arrayIndex(token);
      if (index === undefined) throw fail('bad-index', `${JSON.stringify(token)} is not an array index of ${at}`);
      next = node[index];
    } else if (isObject(node)) {
      next = Object.hasOwn(node, token) ? node[token] : undefined;
      if (next === undefined && op.op === 'safe-replace') {
        next = {};
        setMember(node, token, next);
      }
    } else {
      if (op.op === 'safe-remove') return undefined;
      throw fail('missing-target', `${at} is ${JSON.stringify(node)}, which has no member ${JSON.stringify(token)}`);
    }
    if (next === undefined) {
      if (op.op === 'safe-remove') return undefined;
      throw fail('missing-target', `${pointerOf(op.tokens.slice(0, depth + 1))} does not exist`);
    }
    node = next;
  }
  if (Array.isArray(node) || isObject(node)) return node;
  if (op.op === 'safe-remove') return undefined;
  throw fail('missing-target', `the parent of the target is ${JSON.stringify(node)}, not an object or array`);
}

function pointerOf(tokens: string[]): string {
  return tokens.map((t) => '/' + t.replace(/~/g, '~0').replace(/\//g, '~1')).join('');
}

function applyToArray(arr: Json[], token: string, op: JsonPatchOp, fail: Fail): void {
  const appends = op.op === 'add' || op.op === 'safe-replace';
  if (token === '-') {
    if (appends) arr.push(copy(op.value));
    else if (op.op !== 'safe-remove')
      throw fail('missing-target', `'-' (after the last element) has no value to ${op.op}`);
    return;
  }
  const index = arrayIndex(token);
  if (index === undefined)
    throw fail('bad-index', `${JSON.stringify(token)} is not an array index (digits, no leading zero)`);
  const exists = index < arr.length;
  switch (op.op) {
    case 'add':
      if (index > arr.length)
        throw fail('bad-index', `index ${index} is beyond the end of the array (length ${arr.length})`);
      arr.splice(index, 0, copy(op.value));
      return;
    case 'safe-replace':
      if (index > arr.length)
        throw fail('bad-index', `index ${index} is beyond the end of the array (length ${arr.length})`);
      arr[index] = copy(op.value);
      return;
    case 'safe-remove':
      if (exists) arr.splice(index, 1);
      return;
    default:
      if (!exists) throw fail('missing-target', `index ${index} does not exist (array length ${arr.length})`);
      if (op.op === 'remove') arr.splice(index, 1);
      else if (op.op === 'replace') arr[index] = copy(op.value);
      else if (!deepEqual(arr[index], op.value)) throw fail('test-failed', 'the value there is not equal to value');
  }
}

function applyToObject(obj: JsonObject, key: string, op: JsonPatchOp, fail: Fail): void {
  const exists = Object.hasOwn(obj, key);
  switch (op.op) {
    case 'add':
    case 'safe-replace':
      setMember(obj, key, copy(op.value));
      return;
    case 'safe-remove':
      if (exists) delete obj[key];
      return;
    default:
      if (!exists) throw fail('missing-target', 'the target member does not exist');
      if (op.op === 'remove') delete obj[key];
      else if (op.op === 'replace') setMember(obj, key, copy(op.value));
      else if (!deepEqual(obj[key], op.value)) throw fail('test-failed', 'the value there is not equal to value');
  }
}
