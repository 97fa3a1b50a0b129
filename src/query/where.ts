/**
 * `where`: a subset of XPath 1.0 evaluated against each list entry.
 * lexer (where-lexer) → parser (where-parser) → closures (where-eval, where-functions) over
 * the JSON-as-XML model of where-values. Compile once per request; `test` per entry.
 */
import type { Json } from '../lib/json.js';
import { lexWhere } from './where-lexer.js';
import { WhereParser } from './where-parser.js';
import { compileExpr } from './where-eval.js';
import { maxWhereSteps, toBool, whereBudget, XNode } from './where-values.js';

export type WherePredicate = { readonly source: string; test(node: Json): boolean };

/** Throws ApiError('invalid-query', {code, position, parameter:'where'}) on any problem. */
export function compileWhere(text: string): WherePredicate {
  const fn = compileExpr(new WhereParser(lexWhere(text)).parse());
  // One budget for the objects a read tests in one go (a list is filtered synchronously); it is
  // full again after that run, so a watch stream's later reads each have their own.
  let left = maxWhereSteps;
  let refill = false;
  return {
    source: text,
    test: (node) => {
      if (!refill) {
        refill = true;
        queueMicrotask(() => {
          left = maxWhereSteps;
          refill = false;
        });
      }
      whereBudget.left = left;
      try {
        return toBool(fn(new XNode('', node, null), 1, 1));
      } finally {
        left = whereBudget.left;
        whereBudget.left = Infinity;
      }
    },
  };
}
