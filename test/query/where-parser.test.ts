import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { expectApiError } from '../helpers/assert.js';
import { lexWhere } from '../../src/query/where-lexer.js';
import { WhereParser, type Expr, type Step } from '../../src/query/where-parser.js';
import { compileWhere } from '../../src/query/where.js';

function step(s: Step): string {
  if (s.axis === 'self') return '.';
  if (s.axis === 'parent') return '..';
  return s.name + s.predicates.map((p) => `[${show(p)}]`).join('');
}

/** A Lisp-like rendering of the tree, so precedence and associativity are visible. */
function show(e: Expr): string {
  switch (e.kind) {
    case 'number':
      return String(e.value);
    case 'literal':
      return `'${e.value}'`;
    case 'negate':
      return `(- ${show(e.operand)})`;
    case 'binary':
      return `(${e.op} ${show(e.left)} ${show(e.right)})`;
    case 'call':
      return `${e.name}(${e.args.map(show).join(', ')})`;
    case 'path':
      return (e.absolute ? '/' : '') + e.steps.map(step).join('/');
  }
}

const parse = (text: string) => show(new WhereParser(lexWhere(text)).parse());

const cases: Array<[string, string]> = [
  ["type = 'edge'", "(= type 'edge')"],
  [
    "type = 'edge' and connection-state/connected = true()",
    "(and (= type 'edge') (= connection-state/connected true()))",
  ],
  ['deployed-applications > 0', '(> deployed-applications 0)'],
  ["starts-with(name, 'x')", "starts-with(name, 'x')"],
  ["match-labels(host-labels, 'key = value')", "match-labels(host-labels, 'key = value')"],
  ['a or b and c', '(or a (and b c))'],
  ['a = b != c', '(!= (= a b) c)'],
  ['a < b = c > d', '(= (< a b) (> c d))'],
  ['1 + 2 * 3', '(+ 1 (* 2 3))'],
  ['1 - 2 - 3', '(- (- 1 2) 3)'],
  ['a div b mod c', '(mod (div a b) c)'],
  ['--a', '(- (- a))'],
  ['-a * b', '(* (- a) b)'],
  ['(1 + 2) * 3', '(* (+ 1 2) 3)'],
  ['/', '/'],
  ['/a/b', '/a/b'],
  ['../x/./y', '../x/./y'],
  ['*/name', '*/name'],
  ["hosts[host-id = 'h1'][1]/labels", "hosts[(= host-id 'h1')][1]/labels"],
  ['a[b[c > 1]]', 'a[b[(> c 1)]]'],
  ['count(a) >= 2', '(>= count(a) 2)'],
  ['concat(a, "b", 1)', "concat(a, 'b', 1)"],
];
for (const [text, want] of cases) {
  test(`parse ${text}`, () => assert.is(parse(text), want));
}

/** [text, code, position]: the whole compile (lex, parse, function checks) as the API runs it. */
const errors: Array<[string, string, number]> = [
  ['', 'syntax', 0],
  ['   ', 'syntax', 3],
  ['type = ', 'syntax', 7],
  ["type 'edge'", 'syntax', 5],
  ['a and', 'syntax', 5],
  ['(a', 'syntax', 2],
  ['a)', 'syntax', 1],
  ['f(a', 'syntax', 3],
  ['contains(a b)', 'syntax', 11],
  ['a[1', 'syntax', 3],
  ['a/', 'syntax', 2],
  ['a = = b', 'syntax', 4],
  ['//a', 'unsupported', 0],
  ['a | b', 'unsupported', 2],
  ['@id', 'unsupported', 0],
  ['child::a', 'unsupported', 5],
  ['(a)[1]', 'syntax', 3],
  ['x = foo(1)', 'unknown-function', 4],
  ['x and node()', 'unknown-function', 6],
  ['true(1)', 'wrong-arity', 0],
  ["a or starts-with('x')", 'wrong-arity', 5],
  ['not()', 'wrong-arity', 0],
  ['concat("a")', 'wrong-arity', 0],
  ["re-match(name, 'a', 'b')", 'wrong-arity', 0],
  ['re-match(name, a)', 'literal-required', 15],
  ["match-labels(labels, concat('a', '=b'))", 'literal-required', 21],
  ["match-labels('x', 'a')", 'type', 13],
  ['count(1)', 'type', 6],
  ["name = 'x", 'unterminated-string', 7],
  // Errors inside the literal are placed in the where text: literal at 15, quote +1, then the offset.
  ["re-match(name, 'a(?=b)')", 'regex-unsupported', 17],
  ["re-match(name, 'ab[')", 'regex-syntax', 18],
  ["match-labels(labels, 'env = ')", 'syntax', 28],
  ["match-labels(labels, 'env in {a')", 'syntax', 31],
  ["match-labels(labels, '')", 'empty', 22],
];
for (const [text, code, position] of errors) {
  test(`error ${code} at ${position}: ${text}`, () => {
    // invalid-query is the 400 of a query expression.
    expectApiError(() => compileWhere(text), 'invalid-query', { code, position, parameter: 'where' });
  });
}

test.run();
