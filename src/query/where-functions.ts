/**
 * The function library of `where`: boolean, number, string, string-length, true, false, not,
 * position, last, count, concat, starts-with, contains, string-compare, re-match and
 * match-labels. Each entry checks what only the compiler can know (literal arguments, node-set
 * arguments) and returns a closure. The regular expression of `re-match` and the label
 * expression of `match-labels` are literals compiled here, once per request, and their errors
 * are reported at their place inside the where text.
 * `re-match` finds the pattern anywhere in the string (PCRE/search semantics, as the
 * exporter's match-re); anchor with ^…$ for a whole-string match.
 */
import { isObject, type Json } from '../lib/json.js';
import { compileRegex } from '../lib/regex.js';
import { compileLabelExpr, type Labels } from './labels.js';
import { innerProblem, queryError } from './error.js';
import type { Expr } from './where-parser.js';
import { stringValue, toBool, toNum, toStr, XNode, type XValue } from './where-values.js';

export type Fn = (node: XNode, pos: number, size: number) => XValue;

type Builder = (args: Fn[], exprs: Expr[]) => Fn;
type Entry = { min: number; max: number; build: Builder };

function literalArg(exprs: Expr[], i: number, fn: string): { value: string; pos: number } {
  const e = exprs[i];
  if (e?.kind !== 'literal') {
    throw queryError('where', 'literal-required', e?.pos ?? 0, `argument ${i + 1} of ${fn}() must be a quoted string`);
  }
  return { value: e.value, pos: e.pos };
}

function nodeSetArg(exprs: Expr[], i: number, fn: string): void {
  const e = exprs[i];
  if (e?.kind !== 'path')
    throw queryError('where', 'type', e?.pos ?? 0, `argument ${i + 1} of ${fn}() must be a path (a node-set)`);
}

/** Re-raise an error of a nested language at its place inside the literal (after the quote). */
function nested<T>(literalPos: number, what: string, build: () => T): T {
  try {
    return build();
  } catch (err) {
    const p = innerProblem(err);
    if (!p) throw err;
    throw queryError('where', p.code, literalPos + 1 + p.position, `the ${what} is invalid: ${p.message}`);
  }
}

function text(v: Json): string {
  if (typeof v === 'string') return v;
  return stringValue(new XNode('', v, null));
}

/** A labels node's children as a label map: `labels: {env: prod, zone: [a, b]}`. */
function labelsOf(n: XNode): Labels | undefined {
  const v = n.value;
  if (!isObject(v)) return undefined;
  const out: Record<string, string | string[]> = {};
  for (const k in v) {
    const c = v[k];
    if (c === undefined) continue;
    out[k] = Array.isArray(c) ? c.map(text) : text(c);
  }
  return out;
}

/** The context node as a node-set: the implicit argument of number(), string(), string-length(). */
const ctxSet: Fn = (n) => [n];

export const functions: Readonly<Record<string, Entry>> = {
  boolean: {
    min: 1,
    max: 1,
    build:
      ([a = ctxSet]) =>
      (n, p, s) =>
        toBool(a(n, p, s)),
  },
  number: {
    min: 0,
    max: 1,
    build: (args) => {
      const a = args[0] ?? ctxSet;
      return (n, p, s) => toNum(a(n, p, s));
    },
  },
  string: {
    min: 0,
    max: 1,
    build: (args) => {
      const a = args[0] ?? ctxSet;
      return (n, p, s) => toStr(a(n, p, s));
    },
  },
  'string-length': {
    min: 0,
    max: 1,
    build: (args) => {
      const a = args[0] ?? ctxSet;
      return (n, p, s) => toStr(a(n, p, s)).length;
    },
  },
  true: { min: 0, max: 0, build: () => () => true },
  false: { min: 0, max: 0, build: () => () => false },
  not: {
    min: 1,
    max: 1,
    build:
      ([a = ctxSet]) =>
      (n, p, s) =>
        !toBool(a(n, p, s)),
  },
  position: { min: 0, max: 0, build: () => (_n, p) => p },
  last: { min: 0, max: 0, build: () => (_n, _p, s) => s },
  count: {
    min: 1,
    max: 1,
    build: ([a = ctxSet], exprs) => {
      nodeSetArg(exprs, 0, 'count');
      return (n, p, s) => {
        const v = a(n, p, s);
        return Array.isArray(v) ? v.length : 0;
      };
    },
  },
  concat: {
    min: 2,
    max: Infinity,
    build: (args) => (n, p, s) => {
      let out = '';
      for (const a of args) out += toStr(a(n, p, s));
      return out;
    },
  },
  'starts-with': {
    min: 2,
    max: 2,
    build:
      ([a = ctxSet, b = ctxSet]) =>
      (n, p, s) =>
        toStr(a(n, p, s)).startsWith(toStr(b(n, p, s))),
  },
  contains: {
    min: 2,
    max: 2,
    build:
      ([a = ctxSet, b = ctxSet]) =>
      (n, p, s) =>
        toStr(a(n, p, s)).includes(toStr(b(n, p, s))),
  },
  'string-compare': {
    min: 2,
    max: 2,
    build:
      ([a = ctxSet, b = ctxSet]) =>
      (n, p, s) => {
        const x = toStr(a(n, p, s));
        const y = toStr(b(n, p, s));
        return x < y ? -1 : x === y ? 0 : 1;
      },
  },
  're-match': {
    min: 2,
    max: 2,
    build: ([a = ctxSet], exprs) => {
      const lit = literalArg(exprs, 1, 're-match');
      const re = nested(lit.pos, 'regular expression', () => compileRegex(lit.value, 'where'));
      return (n, p, s) => re.test(toStr(a(n, p, s)));
    },
  },
  'match-labels': {
    min: 2,
    max: 2,
    build: ([a = ctxSet], exprs) => {
      nodeSetArg(exprs, 0, 'match-labels');
      const lit = literalArg(exprs, 1, 'match-labels');
      const matcher = nested(lit.pos, 'label expression', () => compileLabelExpr(lit.value));
      return (n, p, s) => {
        const v = a(n, p, s);
        if (!Array.isArray(v)) return false;
        for (const node of v) {
          const labels = labelsOf(node);
          if (labels && matcher.test(labels)) return true;
        }
        return false;
      };
    },
  },
};
