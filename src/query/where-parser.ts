/**
 * Recursive-descent parser for the `where` subset of XPath 1.0 (precedence of §3.4–3.5, lowest
 * first: or, and, = !=, < <= > >=, + -, * div mod, unary -). Location paths use the child axis
 * only (names, `*`, `.`, `..`), each step with predicates; `//`, axes, unions and attributes
 * are outside the subset and rejected with code `unsupported` at their position.
 *
 * Depth is bounded (MAX_EXPRESSION_DEPTH, README "Query parameters"): the expression's tree may
 * be at most that many levels deep, where each parenthesis, function call, predicate and unary
 * minus nests one level and so does each operator of a chain (`a or b or c` is two levels).
 * Deeper is a 400 `too-deep` at the position where the limit is passed, never a stack overflow
 * here or in the compiler and evaluator, which recurse once per level.
 */
import type { Token, TokenKind } from './where-lexer.js';
import type { ApiError } from '../lib/errors.js';
import { queryError } from './error.js';
import { MAX_EXPRESSION_DEPTH } from './limits.js';

export type BinaryOp = 'or' | 'and' | '=' | '!=' | '<' | '<=' | '>' | '>=' | '+' | '-' | '*' | 'div' | 'mod';

export type Step =
  | { axis: 'self'; pos: number }
  | { axis: 'parent'; pos: number }
  | { axis: 'child'; name: string | '*'; predicates: Expr[]; pos: number };

export type Expr =
  | { kind: 'number'; value: number; pos: number }
  | { kind: 'literal'; value: string; pos: number }
  | { kind: 'binary'; op: BinaryOp; left: Expr; right: Expr; pos: number }
  | { kind: 'negate'; operand: Expr; pos: number }
  | { kind: 'call'; name: string; args: Expr[]; pos: number }
  | { kind: 'path'; absolute: boolean; steps: Step[]; pos: number };

const levels: ReadonlyArray<ReadonlyArray<TokenKind>> = [
  ['or'],
  ['and'],
  ['=', '!='],
  ['<', '<=', '>', '>='],
  ['+', '-'],
  ['multiply', 'div', 'mod'],
];

const unsupported: Partial<Record<TokenKind, string>> = {
  '//': "'//' (descendant paths)",
  '|': "'|' (node-set union)",
  '@': "'@' (attributes)",
  '::': "'::' (axes)",
};

export class WhereParser {
  private i = 0;
  /** Levels of parentheses, calls, predicates and unary minus open at the current token. */
  private depth = 0;
  constructor(private readonly toks: Token[]) {}

  /** Opens one nesting level at `pos`; beyond the limit, a 400 before the recursion goes on. */
  private enter(pos: number): void {
    if (++this.depth > MAX_EXPRESSION_DEPTH) throw tooDeep(pos);
  }

  private leave(): void {
    this.depth--;
  }

  private peek(): Token {
    return this.toks[this.i] ?? { kind: 'end', text: '', pos: 0 };
  }

  private fail(what: string): never {
    const t = this.peek();
    const why = unsupported[t.kind];
    if (why) throw queryError('where', 'unsupported', t.pos, `${why} is not part of the where language`);
    const seen = t.kind === 'end' ? 'the end of the expression' : `'${t.text}'`;
    throw queryError('where', 'syntax', t.pos, `expected ${what}, found ${seen}`);
  }

  parse(): Expr {
    if (this.peek().kind === 'end') this.fail('an expression');
    const e = this.binary(0);
    if (this.peek().kind !== 'end') this.fail('an operator or the end of the expression');
    checkTreeDepth(e);
    return e;
  }

  private binary(level: number): Expr {
    const ops = levels[level];
    if (!ops) return this.unary();
    let left = this.binary(level + 1);
    for (;;) {
      const t = this.peek();
      if (!ops.includes(t.kind)) return left;
      this.i++;
      const right = this.binary(level + 1);
      const op: BinaryOp = t.kind === 'multiply' ? '*' : (t.kind as BinaryOp);
      left = { kind: 'binary', op, left, right, pos: t.pos };
    }
  }

  private unary(): Expr {
    const t = this.peek();
    if (t.kind === '-') {
      this.i++;
      this.enter(t.pos);
      const operand = this.unary();
      this.leave();
      return { kind: 'negate', operand, pos: t.pos };
    }
    return this.primary();
  }

  private primary(): Expr {
    const t = this.peek();
    switch (t.kind) {
      case 'number':
        this.i++;
        return { kind: 'number', value: t.value ?? Number(t.text), pos: t.pos };
      case 'literal':
        this.i++;
        return { kind: 'literal', value: t.text, pos: t.pos };
      case '(': {
        this.i++;
        this.enter(t.pos);
        const e = this.binary(0);
        if (this.peek().kind !== ')') this.fail("')'");
        this.i++;
        this.leave();
        if (this.peek().kind === '[' || this.peek().kind === '/')
          this.fail('an operator (filtering a parenthesised expression is not supported)');
        return e;
      }
      case 'function':
        return this.call();
      case '/':
        return this.path();
      case 'name':
      case '*':
      case '.':
      case '..':
        return this.path();
      default:
        return this.fail('a path, a literal, a number or a function call');
    }
  }

  private call(): Expr {
    const name = this.peek();
    this.i += 2; // the name and '(' (the lexer saw the parenthesis)
    const args: Expr[] = [];
    if (this.peek().kind === ')') {
      this.i++;
      return { kind: 'call', name: name.text, args, pos: name.pos };
    }
    this.enter(name.pos);
    for (;;) {
      args.push(this.binary(0));
      const t = this.peek();
      this.i++;
      if (t.kind === ')') {
        this.leave();
        return { kind: 'call', name: name.text, args, pos: name.pos };
      }
      if (t.kind !== ',') {
        this.i--;
        this.fail("',' or ')'");
      }
    }
  }

  private path(): Expr {
    const start = this.peek();
    let absolute = false;
    if (start.kind === '/') {
      absolute = true;
      this.i++;
      const next = this.peek().kind;
      if (next !== 'name' && next !== '*' && next !== '.' && next !== '..') {
        return { kind: 'path', absolute, steps: [], pos: start.pos };
      }
    }
    const steps: Step[] = [this.step()];
    while (this.peek().kind === '/') {
      this.i++;
      steps.push(this.step());
    }
    return { kind: 'path', absolute, steps, pos: start.pos };
  }

  private step(): Step {
    const t = this.peek();
    if (t.kind === '.') {
      this.i++;
      return { axis: 'self', pos: t.pos };
    }
    if (t.kind === '..') {
      this.i++;
      return { axis: 'parent', pos: t.pos };
    }
    if (t.kind !== 'name' && t.kind !== '*') this.fail('a step (a name, *, . or ..)');
    this.i++;
    const predicates: Expr[] = [];
    while (this.peek().kind === '[') {
      this.enter(this.peek().pos);
      this.i++;
      predicates.push(this.binary(0));
      if (this.peek().kind !== ']') this.fail("']'");
      this.i++;
      this.leave();
    }
    return { axis: 'child', name: t.kind === '*' ? '*' : t.text, predicates, pos: t.pos };
  }
}

function tooDeep(pos: number): ApiError {
  return queryError(
    'where',
    'too-deep',
    pos,
    `the expression nests deeper than ${MAX_EXPRESSION_DEPTH} levels (parentheses, calls, predicates, unary minus and chained operators each count one)`,
    { limit: MAX_EXPRESSION_DEPTH },
  );
}

/** The children of a node of the tree, for the depth check. */
function childrenOf(e: Expr): Expr[] {
  switch (e.kind) {
    case 'binary':
      return [e.left, e.right];
    case 'negate':
      return [e.operand];
    case 'call':
      return e.args;
    case 'path':
      return e.steps.flatMap((s) => (s.axis === 'child' ? s.predicates : []));
    default:
      return [];
  }
}

/**
 * The tree of a long chain (`a or b or c ...`) is as deep as the chain is long, which the
 * parser's levels do not count: walked here without recursion, the first node beyond the
 * limit is the place of the 400.
 */
function checkTreeDepth(root: Expr): void {
  const stack: Array<[Expr, number]> = [[root, 1]];
  for (let top = stack.pop(); top; top = stack.pop()) {
    const [e, depth] = top;
    if (depth > MAX_EXPRESSION_DEPTH) throw tooDeep(e.pos);
    for (const c of childrenOf(e)) stack.push([c, depth + 1]);
  }
}
