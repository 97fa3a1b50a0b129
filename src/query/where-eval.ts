/**
 * Turns a parsed `where` expression into closures, once per request, so testing an object is
 * a chain of direct calls: no tree walking and no re-dispatch on node kinds.
 * The context node is the list entry; '/' is the root of the entry's document, which is the
 * entry itself (so `/name` and `name` select the same field); '..' of the entry is empty.
 */
import { isObject, type Json } from '../lib/json.js';
import { queryError } from './error.js';
import { directCompare } from './where-direct.js';
import { functions, type Fn } from './where-functions.js';
import type { Expr, Step } from './where-parser.js';
import { compare, spend, toBool, toNum, XNode, type NodeSet, type XValue } from './where-values.js';

type StepFn = (input: NodeSet) => NodeSet;

function pushValue(name: string, v: Json, parent: XNode, out: NodeSet): void {
  if (Array.isArray(v)) {
    spend(v.length);
    for (const item of v) pushValue(name, item, parent, out);
  } else out.push(new XNode(name, v, parent));
}

function pushChildren(n: XNode, name: string, out: NodeSet): void {
  const v = n.value;
  if (!isObject(v)) return;
  if (name === '*') {
    for (const k in v) {
      const c = v[k];
      if (c !== undefined) pushValue(k, c, n, out);
    }
    return;
  }
  if (!Object.hasOwn(v, name)) return;
  const c = v[name];
  if (c !== undefined) pushValue(name, c, n, out);
}

/** Predicates filter per context node, with proximity positions (XPath §2.4). */
function applyPredicates(nodes: NodeSet, predicates: Fn[]): NodeSet {
  let current = nodes;
  for (const pred of predicates) {
    const next: NodeSet = [];
    const size = current.length;
    spend(size);
    for (let i = 0; i < size; i++) {
      const n = current[i] as XNode;
      const r = pred(n, i + 1, size);
      if (typeof r === 'number' ? r === i + 1 : toBool(r)) next.push(n);
    }
    current = next;
  }
  return current;
}

function compileStep(step: Step): StepFn {
  if (step.axis === 'self') return (input) => input;
  if (step.axis === 'parent') {
    return (input) => {
      // Each parent once, in order (a Set: input may be a whole long list's nodes).
      const seen = new Set<XNode>();
      for (const n of input) if (n.parent) seen.add(n.parent);
      return [...seen];
    };
  }
  const { name } = step;
  const predicates = step.predicates.map(compileExpr);
  if (predicates.length === 0) {
    return (input) => {
      const out: NodeSet = [];
      for (const n of input) pushChildren(n, name, out);
      return out;
    };
  }
  return (input) => {
    const out: NodeSet = [];
    for (const n of input) {
      const candidates: NodeSet = [];
      pushChildren(n, name, candidates);
      for (const kept of applyPredicates(candidates, predicates)) out.push(kept);
    }
    return out;
  };
}

function rootOf(n: XNode): XNode {
  let r = n;
  while (r.parent) r = r.parent;
  return r;
}

function compilePath(absolute: boolean, steps: Step[]): Fn {
  const fns = steps.map(compileStep);
  const first = fns[0];
  if (!absolute && fns.length === 1 && first) return (n) => first([n]);
  return (n) => {
    let set: NodeSet = [absolute ? rootOf(n) : n];
    for (const f of fns) {
      if (set.length === 0) break;
      set = f(set);
    }
    return set;
  };
}

function arithmetic(op: '+' | '-' | '*' | 'div' | 'mod', l: Fn, r: Fn): Fn {
  switch (op) {
    case '+':
      return (n, p, s) => toNum(l(n, p, s)) + toNum(r(n, p, s));
    case '-':
      return (n, p, s) => toNum(l(n, p, s)) - toNum(r(n, p, s));
    case '*':
      return (n, p, s) => toNum(l(n, p, s)) * toNum(r(n, p, s));
    case 'div':
      return (n, p, s) => toNum(l(n, p, s)) / toNum(r(n, p, s));
    // XPath mod truncates like JavaScript's % (5 mod -2 = 1, -5 mod 2 = -1).
    case 'mod':
      return (n, p, s) => toNum(l(n, p, s)) % toNum(r(n, p, s));
  }
}

function constant(e: Expr): XValue | undefined {
  if (e.kind === 'number' || e.kind === 'literal') return e.value;
  return undefined;
}

export function compileExpr(e: Expr): Fn {
  switch (e.kind) {
    case 'number':
    case 'literal': {
      const v = e.value;
      return () => v;
    }
    case 'negate': {
      const inner = compileExpr(e.operand);
      return (n, p, s) => -toNum(inner(n, p, s));
    }
    case 'path':
      return compilePath(e.absolute, e.steps);
    case 'call': {
      const entry = Object.hasOwn(functions, e.name) ? functions[e.name] : undefined;
      if (!entry) throw queryError('where', 'unknown-function', e.pos, `there is no function ${e.name}()`);
      if (e.args.length < entry.min || e.args.length > entry.max) {
        const want =
          entry.min === entry.max
            ? `${entry.min}`
            : entry.max === Infinity
              ? `at least ${entry.min}`
              : `${entry.min} to ${entry.max}`;
        throw queryError('where', 'wrong-arity', e.pos, `${e.name}() takes ${want} argument(s), not ${e.args.length}`);
      }
      return entry.build(e.args.map(compileExpr), e.args);
    }
    case 'binary': {
      const l = compileExpr(e.left);
      const r = compileExpr(e.right);
      switch (e.op) {
        case 'or':
          return (n, p, s) => toBool(l(n, p, s)) || toBool(r(n, p, s));
        case 'and':
          return (n, p, s) => toBool(l(n, p, s)) && toBool(r(n, p, s));
        case '+':
        case '-':
        case '*':
        case 'div':
        case 'mod':
          return arithmetic(e.op, l, r);
        default: {
          const op = e.op;
          const direct = directCompare(op, e.left, e.right);
          if (direct) return direct;
          const rc = constant(e.right);
          if (rc !== undefined) return (n, p, s) => compare(op, l(n, p, s), rc);
          return (n, p, s) => compare(op, l(n, p, s), r(n, p, s));
        }
      }
    }
  }
}
