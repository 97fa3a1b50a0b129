import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { expectApiError } from '../helpers/assert.js';
import { lexWhere } from '../../src/query/where-lexer.js';

/** Kinds, with the text of names, numbers and literals, e.g. `name:a - number:1`. */
function kinds(text: string): string {
  return lexWhere(text)
    .filter((t) => t.kind !== 'end')
    .map((t) =>
      t.kind === 'name' || t.kind === 'function' || t.kind === 'number' || t.kind === 'literal'
        ? `${t.kind}:${t.text}`
        : t.kind,
    )
    .join(' ');
}

const cases: Array<[string, string]> = [
  ["type = 'edge'", 'name:type = literal:edge'],
  ['connection-state/connected', 'name:connection-state / name:connected'],
  ['a-b', 'name:a-b'],
  ['a - b', 'name:a - name:b'],
  ['a -b', 'name:a - name:b'],
  ['3-1', 'number:3 - number:1'],
  ['a-1', 'name:a-1'],
  ['.5 + 1.25 + 7.', 'number:.5 + number:1.25 + number:7.'],
  ['. .. ./a ../b', '. .. . / name:a .. / name:b'],
  ['* * 2', '* multiply number:2'],
  ['a*b', 'name:a multiply name:b'],
  ['and and and', 'name:and and name:and'],
  ['div div div', 'name:div div name:div'],
  ['mod mod 2', 'name:mod mod number:2'],
  ['or or or', 'name:or or name:or'],
  ['not (x)', 'function:not ( name:x )'],
  ['true()', 'function:true ( )'],
  ['re-match(name, "a\'b")', "function:re-match ( name:name , literal:a'b )"],
  ['a<=b>=c<d>e!=f=g', 'name:a <= name:b >= name:c < name:d > name:e != name:f = name:g'],
  ['hosts[1]/host-id', 'name:hosts [ number:1 ] / name:host-id'],
  ['ietf:name = 1', 'name:ietf:name = number:1'],
  ['//a | @b', '// name:a | @ name:b'],
];

for (const [text, want] of cases) {
  test(`lex ${text}`, () => assert.is(kinds(text), want));
}

test('token positions are 0-based character offsets', () => {
  assert.equal(
    lexWhere("  a = 'x'").map((t) => t.pos),
    [2, 4, 6, 9],
  );
});

const errors: Array<[string, string, number]> = [
  ["name = 'edge", 'unterminated-string', 7],
  ['name = "x', 'unterminated-string', 7],
  ['a # b', 'syntax', 2],
  ['a = $x', 'syntax', 4],
  ['a ! b', 'syntax', 2],
];
for (const [text, code, position] of errors) {
  test(`lex error ${code} in ${text}`, () => {
    expectApiError(() => lexWhere(text), 'invalid-query', { code: code, position: position, parameter: 'where' });
  });
}

test.run();
