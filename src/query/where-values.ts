/**
 * The XPath 1.0 data model over JSON, and the conversions and comparisons of XPath §3.4, §4.
 *
 * A JSON object is an element whose children are its fields; a field holding an array is
 * several sibling elements of the same name (nested arrays flatten); a scalar is an element
 * whose text is the scalar as XML would print it (`true`, `42`, `null` → empty). The
 * string-value of an object is the concatenation of its descendants' text, in order.
 */
import { isObject, type Json } from '../lib/json.js';
import { queryError } from './error.js';

/**
 * What one request's `where` may spend, in steps (nodes made, pairs compared), over every
 * object it tests: an expression whose cost grows with the square of a list (a node-set
 * comparison inside a predicate over 20,000 entries) held the event loop for 20 s. Set by
 * compileWhere's test around each evaluation; 400 `where-too-costly` when spent.
 */
export const whereBudget = { left: Infinity };
export const maxWhereSteps = 20_000_000;

export function spend(steps: number): void {
  whereBudget.left -= steps;
  if (whereBudget.left < 0)
    throw queryError(
      'where',
      'where-too-costly',
      0,
      `the expression needs more than ${maxWhereSteps} steps over these objects (a comparison of two long lists, for each of a long list's entries?); simplify it`,
    );
}

export class XNode {
  constructor(
    readonly name: string,
    readonly value: Json,
    readonly parent: XNode | null,
  ) {}
}

export type NodeSet = XNode[];
export type XValue = number | string | boolean | NodeSet;

function scalarText(v: Json): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number') return numberToString(v);
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  return '';
}

function deepText(v: Json): string {
  if (Array.isArray(v)) return v.map(deepText).join('');
  if (isObject(v)) {
    let s = '';
    for (const k in v) {
      const c = v[k];
      if (c !== undefined) s += deepText(c);
    }
    return s;
  }
  return scalarText(v);
}

/** The string-value of the node holding `v` (XPath §5). */
export function textOf(v: Json): string {
  return typeof v === 'string' ? v : deepText(v);
}

export function stringValue(n: XNode): string {
  return textOf(n.value);
}

/** XPath `string(number)`: integers without '.0', no exponent notation, NaN/Infinity spelled out. */
export function numberToString(n: number): string {
  if (Number.isNaN(n)) return 'NaN';
  if (n === Infinity) return 'Infinity';
  if (n === -Infinity) return '-Infinity';
  if (Object.is(n, -0)) return '0';
  const s = String(n);
  if (!s.includes('e')) return s;
  if (Number.isInteger(n)) return BigInt(n).toString();
  return n.toFixed(20).replace(/0+$/, '').replace(/\.$/, '');
}

/** XPath `number(string)`: optional blanks, optional '-', digits with an optional fraction. */
const numberSyntax = /^\s*-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*$/;
export function stringToNumber(s: string): number {
  return numberSyntax.test(s) ? Number(s) : NaN;
}

export function toStr(v: XValue): string {
  if (typeof v === 'string') return v;
  if (typeof v === 'number') return numberToString(v);
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  const first = v[0];
  return first ? stringValue(first) : '';
}

export function toNum(v: XValue): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'boolean') return v ? 1 : 0;
  return stringToNumber(typeof v === 'string' ? v : toStr(v));
}

/**
 * XPath's boolean(): a node-set is true when it has a node, except that a node holding JSON
 * `false` counts as false (the data are JSON, where a boolean member is a value: `in-sync =
 * false()`, `not(enabled)` and a bare `in-sync` test that value, as the seed's form
 * `connected = true()` means, rather than the member's presence).
 */
export function toBool(v: XValue): boolean {
  if (typeof v === 'boolean') return v;
  if (typeof v === 'number') return v !== 0 && !Number.isNaN(v);
  if (typeof v === 'string') return v.length > 0;
  return v.some((n) => n.value !== false);
}

export type CompareOp = '=' | '!=' | '<' | '<=' | '>' | '>=';

function numbers(op: CompareOp, a: number, b: number): boolean {
  switch (op) {
    case '=':
      return a === b;
    case '!=':
      return a !== b;
    case '<':
      return a < b;
    case '<=':
      return a <= b;
    case '>':
      return a > b;
    case '>=':
      return a >= b;
  }
}

/** Comparison of two values none of which is a node-set (§3.4, last paragraphs). */
function atoms(op: CompareOp, a: string | number | boolean, b: string | number | boolean): boolean {
  if (op === '=' || op === '!=') {
    let eq: boolean;
    if (typeof a === 'boolean' || typeof b === 'boolean') eq = toBool(a) === toBool(b);
    else if (typeof a === 'number' || typeof b === 'number') eq = toNum(a) === toNum(b);
    else eq = a === b;
    return op === '=' ? eq : !eq;
  }
  return numbers(op, toNum(a), toNum(b));
}

/**
 * The test one node's string-value must pass for `node op atom` to hold, atom being a string or
 * number (§3.4). Built once per comparison with a constant side, so evaluation only calls it.
 */
export function textTest(op: CompareOp, atom: string | number): (text: string) => boolean {
  if (typeof atom === 'number') return (t) => numbers(op, stringToNumber(t), atom);
  if (op === '=') return (t) => t === atom;
  if (op === '!=') return (t) => t !== atom;
  const b = stringToNumber(atom);
  return (t) => numbers(op, stringToNumber(t), b);
}

/** Some node n of `set` with `n op atom` (the node on the left). */
function setAtom(op: CompareOp, set: NodeSet, atom: string | number | boolean): boolean {
  if (typeof atom === 'boolean') return atoms(op, toBool(set), atom);
  const pass = textTest(op, atom);
  for (const n of set) if (pass(stringValue(n))) return true;
  return false;
}

export const flipped: Record<CompareOp, CompareOp> = {
  '=': '=',
  '!=': '!=',
  '<': '>',
  '<=': '>=',
  '>': '<',
  '>=': '<=',
};

export function compare(op: CompareOp, a: XValue, b: XValue): boolean {
  const aSet = Array.isArray(a);
  const bSet = Array.isArray(b);
  if (aSet && bSet) {
    if (a.length === 0 || b.length === 0) return false;
    spend(a.length * b.length);
    const right = b.map(stringValue);
    for (const n of a) {
      const s = stringValue(n);
      for (const t of right) {
        if (op === '=' ? s === t : op === '!=' ? s !== t : numbers(op, stringToNumber(s), stringToNumber(t)))
          return true;
      }
    }
    return false;
  }
  if (aSet) return setAtom(op, a, b as string | number | boolean);
  if (bSet) return setAtom(flipped[op], b, a);
  return atoms(op, a, b);
}
