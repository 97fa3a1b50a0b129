import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { compileRegex } from '../../src/lib/regex.js';
import { ApiError } from '../../src/lib/errors.js';
import { RE2JS } from 're2js';

const rejected: Array<[string, string, number]> = [
  ['a(?=b)', 'lookaround', 1],
  ['x(?<!y)', 'lookaround', 1],
  ['(?>ab)', 'atomic group', 0],
  ['(a)\\1', 'backreference', 3],
  ['a*+', 'possessive quantifier', 1],
  ['ab{2}+', 'possessive quantifier', 2],
];
for (const [pattern, construct, position] of rejected) {
  test(`rejects ${construct} in ${pattern}`, () => {
    try {
      compileRegex(pattern, 'match-re[0]');
      assert.unreachable();
    } catch (err) {
      assert.instance(err, ApiError);
      const e = err as ApiError;
      assert.is(e.status, 400);
      assert.is(e.info?.construct, construct);
      assert.is(e.info?.position, position);
      assert.is(e.info?.path, 'match-re[0]');
    }
  });
}

test('brackets and escapes are not mistaken for constructs', () => {
  assert.ok(compileRegex('[(?=]x', 'p').test('(x'));
  assert.ok(compileRegex('\\(\\?=', 'p').test('(?='));
});

test('syntax errors name the position', () => {
  try {
    compileRegex('ab[', 'p');
    assert.unreachable();
  } catch (err) {
    assert.is((err as ApiError).info?.code, 'regex-syntax');
    assert.is((err as ApiError).info?.position, 2);
  }
});

test('test() answers as the RE2 matcher does, literal patterns (a substring search) included', () => {
  const patterns = [
    '"level":"debug"',
    'plain text',
    '',
    'é ü',
    'a.b',
    'a\\.b',
    '^"x',
    'x"$',
    'de(bug|v)',
    '[0-9]{3}',
    '(?i)DEBUG',
    'a b',
  ];
  const texts = [
    '{"level":"debug"}',
    '{"level":"DEBUG"}',
    'plain text here',
    'a.b',
    'axb',
    '"x"',
    'é ü!',
    'dev 123',
    'a b',
    '',
  ];
  for (const p of patterns) {
    const ours = compileRegex(p, 'match-re[0]');
    const re2 = RE2JS.compile(p);
    for (const t of texts)
      assert.is(ours.test(t), re2.matcher(t).find(), `${JSON.stringify(p)} on ${JSON.stringify(t)}`);
  }
});

test('inline flags, matching and replacing', () => {
  const r = compileRegex('(?i)temp-(\\d+)', 'p');
  assert.ok(r.test('x TEMP-42'));
  assert.not.ok(r.test('temp-x'));
  assert.is(compileRegex('o+', 'p').replaceAll('foo boo', '0'), 'f0 b0');
  assert.is(compileRegex('(\\w+)@', 'p').replaceAll('me@x', '<$1>'), '<me>x');
});

test.run();
