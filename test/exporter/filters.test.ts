import { test } from 'uvu';
import { compileRegex } from '../../src/lib/regex.js';
import * as assert from 'uvu/assert';
import { ApiError } from '../../src/lib/errors.js';
import { compileFilters, textSubject, type FilterConfig } from '../../src/resources/webhook/filters.js';

// Filters see the JSON text of MSG.
const msg = (payload: unknown, host = 'edge-1') =>
  JSON.stringify({ time: '2024-11-21T23:00:00.000Z', seqno: '1-0', host, payload });
const hot = msg({ temp: 42, unit: 'C' });
const cold = msg({ temp: 3, unit: 'C' });
const debug = msg({ level: 'debug', text: 'x' }, 'edge-2');

// [name, config, [message, expected]...]
const cases: Array<[string, FilterConfig, Array<[string, boolean]>]> = [
  [
    'empty config passes everything',
    {},
    [
      [hot, true],
      ['', true],
    ],
  ],
  [
    'empty lists pass everything',
    { 'match-re': [], 'match-string': [], 'no-match-re': [], 'no-match-string': [] },
    [[hot, true]],
  ],
  [
    'match-string: contains',
    { 'match-string': ['"temp"'] },
    [
      [hot, true],
      [debug, false],
    ],
  ],
  [
    'match-string: all of them',
    { 'match-string': ['"temp"', 'edge-2'] },
    [
      [hot, false],
      [debug, false],
      [msg({ temp: 1 }, 'edge-2'), true],
    ],
  ],
  [
    'match-string is literal, not a regex',
    { 'match-string': ['te.p'] },
    [
      [hot, false],
      [msg('te.p'), true],
    ],
  ],
  [
    'match-re: matches',
    { 'match-re': ['"temp":\\d{2,}'] },
    [
      [hot, true],
      [cold, false],
    ],
  ],
  [
    'match-re: all of them',
    { 'match-re': ['"temp":', '"unit":"C"', 'edge-1'] },
    [
      [hot, true],
      [cold, true],
      [debug, false],
    ],
  ],
  [
    'match-re: inline flags',
    { 'match-re': ['(?i)"LEVEL":"DEBUG"'] },
    [
      [debug, true],
      [hot, false],
    ],
  ],
  [
    'no-match-string: none of them',
    { 'no-match-string': ['debug', 'edge-9'] },
    [
      [hot, true],
      [debug, false],
      [msg({}, 'edge-9'), false],
    ],
  ],
  [
    'no-match-re: none of them',
    { 'no-match-re': ['"temp":[0-9]\\b', '"level":"(debug|trace)"'] },
    [
      [hot, true],
      [cold, false],
      [debug, false],
    ],
  ],
  [
    'all four kinds together',
    {
      'match-re': ['"temp":\\d+'],
      'match-string': ['"unit":"C"'],
      'no-match-re': ['"temp":[0-9],'],
      'no-match-string': ['edge-2'],
    },
    [
      [hot, true],
      [cold, false],
      [debug, false],
      [msg({ temp: 50, unit: 'C' }, 'edge-2'), false],
      [msg({ temp: 50, unit: 'F' }), false],
    ],
  ],
  [
    'match and no-match of the same text exclude what contains it',
    { 'match-string': ['debug'], 'no-match-re': ['debug'] },
    [
      [debug, false],
      [hot, false],
    ],
  ],
  [
    'special characters in strings',
    { 'match-string': ['"unit":"C"}'] },
    [
      [hot, true],
      [msg({ unit: 'C', temp: 1 }), false],
    ],
  ],
];
for (const [name, cfg, messages] of cases) {
  test(name, () => {
    const f = compileFilters(cfg);
    for (const [text, expected] of messages) assert.is(f.test(textSubject(text)), expected, `${name}: ${text}`);
  });
}

test("RE2's \\A and \\z (start and end of the text) are accepted", () => {
  assert.ok(compileRegex('\\A\\{', 'match-re[0]').test('{"a":1}'));
  assert.not.ok(compileRegex('\\}\\z', 'match-re[1]').test('{"a":1}\n'));
});

test('passAll is the fast path only when nothing is configured', () => {
  assert.is(compileFilters({}).passAll, true);
  assert.is(compileFilters({ 'match-re': [] }).passAll, true);
  assert.is(compileFilters({ 'no-match-string': ['x'] }).passAll, false);
  assert.is(compileFilters({ 'match-re': ['x'] }).passAll, false);
});

// [config, path in error-info, error-info code, position]
const invalid: Array<[FilterConfig, string, string, number]> = [
  [{ 'match-re': ['ok', 'a(?=b)'] }, 'match-re[1]', 'regex-unsupported', 1],
  [{ 'no-match-re': ['(x)\\1'] }, 'no-match-re[0]', 'regex-unsupported', 3],
  [{ 'match-re': ['x\\Z'] }, 'match-re[0]', 'regex-unsupported', 1],
  [{ 'match-re': ['fine'], 'no-match-re': ['fine', 'also', 'ab['] }, 'no-match-re[2]', 'regex-syntax', 2],
];
for (const [cfg, path, code, position] of invalid) {
  test(`rejects ${path} with ${code}`, () => {
    try {
      compileFilters(cfg);
      assert.unreachable('compiled');
    } catch (err) {
      assert.instance(err, ApiError);
      const e = err as ApiError;
      assert.is(e.status, 400);
      assert.is(e.info?.path, path);
      assert.is(e.info?.code, code);
      assert.is(e.info?.position, position);
    }
  });
}

test.run();
