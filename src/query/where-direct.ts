/**
 * The common shape `a/b op constant` (`type = 'edge'`, `deployed-applications > 0`) evaluated
 * straight on the JSON: no node objects and no node-set arrays, which is most of the cost of
 * a where over a long list. Same result as the general path (see compare in where-values).
 */
import { isObject, type Json } from '../lib/json.js';
import type { Fn } from './where-functions.js';
import type { Expr } from './where-parser.js';
import { flipped, textOf, textTest, type CompareOp } from './where-values.js';

/** Names of a relative path of plain child steps without predicates; else undefined. */
function childNames(e: Expr): string[] | undefined {
  if (e.kind !== 'path' || e.absolute || e.steps.length === 0) return undefined;
  const names: string[] = [];
  for (const s of e.steps) {
    if (s.axis !== 'child' || s.name === '*' || s.predicates.length > 0) return undefined;
    names.push(s.name);
  }
  return names;
}

/** Does some node selected by `names` below `v` have a string-value passing `pass`? */
function someText(v: Json, names: readonly string[], i: number, pass: (text: string) => boolean): boolean {
  if (i === names.length) {
    if (!Array.isArray(v)) return pass(textOf(v));
    for (const item of v) if (someText(item, names, i, pass)) return true;
    return false;
  }
  if (Array.isArray(v)) {
    // An array is several sibling nodes of one name: descend into each.
    for (const item of v) if (someText(item, names, i, pass)) return true;
    return false;
  }
  if (!isObject(v)) return false;
  const name = names[i] as string;
  if (!Object.hasOwn(v, name)) return false;
  const child = v[name];
  return child !== undefined && someText(child, names, i + 1, pass);
}

function constant(e: Expr): string | number | undefined {
  return e.kind === 'number' || e.kind === 'literal' ? e.value : undefined;
}

/** A closure for `left op right` when one side is a plain path and the other a constant. */
export function directCompare(op: CompareOp, left: Expr, right: Expr): Fn | undefined {
  let names = childNames(left);
  let c = constant(right);
  let o = op;
  if (!names || c === undefined) {
    names = childNames(right);
    c = constant(left);
    o = flipped[op];
  }
  if (!names || c === undefined) return undefined;
  const pass = textTest(o, c);
  const path = names;
  return (n) => someText(n.value, path, 0, pass);
}
