/** The small pure facts of src/lib/: durations, JSON pointers, the bounded cache. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { BoundedMap } from '../../src/lib/bounded-cache.js';
import { durationMs, durationPattern, settingDurationMs } from '../../src/lib/duration.js';
import { escapeToken, formatPointer, parsePointer, pointerPattern, resolveTokens } from '../../src/lib/json-pointer.js';

const durations: Array<[string, number | undefined]> = [
  ['250ms', 250],
  ['1s', 1000],
  ['60s', 60_000],
  ['5m', 300_000],
  ['1h', 3_600_000],
  ['1.5s', undefined],
  ['1 s', undefined],
  ['-1s', undefined],
  ['1d', undefined],
  ['', undefined],
];
for (const [text, ms] of durations) {
  test(`duration ${JSON.stringify(text)}: parser and schema pattern agree`, () => {
    assert.is(durationMs(text), ms);
    assert.is(new RegExp(durationPattern).test(text), ms !== undefined);
  });
}

const pointers: Array<[string, string[] | undefined]> = [
  ['', []],
  ['/', ['']],
  ['/a~1b/c~0d', ['a/b', 'c~d']],
  ['/~01', ['~1']],
  ['a', undefined],
  ['/a~2', undefined],
  ['/a~', undefined],
];
for (const [text, tokens] of pointers) {
  test(`pointer ${JSON.stringify(text)}: parser and schema pattern agree`, () => {
    assert.equal(parsePointer(text), tokens);
    assert.is(new RegExp(pointerPattern).test(text), tokens !== undefined);
    if (tokens) assert.is(formatPointer(tokens), text);
  });
}

test('an environment setting reads durations by the same rule, with days besides', () => {
  for (const [text, ms] of durations) if (ms !== undefined) assert.is(settingDurationMs(text), ms, text);
  assert.is(settingDurationMs('7d'), 7 * 86_400_000);
  for (const text of ['1.5s', '1 s', '-1s', '', '7w', '1.5d']) assert.is(settingDurationMs(text), undefined, text);
});

test('escapeToken and resolveTokens', () => {
  assert.is(escapeToken('a/~b'), 'a~1~0b');
  const doc = { a: [{ b: 1 }], o: { 'x/y': null } };
  assert.is(resolveTokens(doc, ['a', '0', 'b']), 1);
  assert.is(resolveTokens(doc, ['a', '00']), undefined);
  assert.is(resolveTokens(doc, ['o', 'x/y']), null);
  assert.is(resolveTokens(doc, ['constructor']), undefined);
});

test('BoundedMap forgets everything when a new key comes to a full map, never on a replacement', () => {
  let fulls = 0;
  const m = new BoundedMap<string, number>(2, () => fulls++);
  m.set('a', 1).set('b', 2).set('b', 3);
  assert.equal(
    [...m],
    [
      ['a', 1],
      ['b', 3],
    ],
  );
  assert.is(fulls, 0);
  m.set('c', 4);
  assert.equal([...m], [['c', 4]]);
  assert.is(fulls, 1);
});

test.run();
