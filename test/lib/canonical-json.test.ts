/**
 * canonicalMembers says yes only for text that is exactly JSON.stringify(JSON.parse(text)):
 * a table of cases on each rule, then a bounded run of generated values, written by
 * JSON.stringify and then altered at random, each checked against JSON.stringify itself
 * (a wrong yes would change MSG's bytes; a wrong no only costs a parse). The members it reports
 * are checked against the parsed object.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { canonicalMembers, keyEscaped, valueEscaped } from '../../src/lib/canonical-json.js';

function canonical(t: string): boolean {
  try {
    return JSON.stringify(JSON.parse(t)) === t;
  } catch {
    return false;
  }
}

const yes = [
  '{}',
  '[]',
  '0',
  '-1',
  '123456789012345',
  '1.5',
  '-0.001',
  '1e+21',
  '1e-7',
  '0.30000000000000004',
  '1234567890123456800',
  'true',
  'false',
  'null',
  '""',
  '"a\\"b\\\\c\\n\\t\\r\\b\\f\\u0001\\u001f/é\u2028😀"',
  '{"a":1,"b":[true,null,{"c":"d"}],"e":{}}',
  '{"__proto__":1}',
  '{"a1":1,"-1":2}',
  '[[[[[]]]]]',
];
const no = [
  '',
  ' {}',
  '{} ',
  '{"a": 1}',
  '{"a":1 }',
  '[1, 2]',
  '1.50',
  '1e5',
  '1E+21',
  '-0',
  '01',
  '1.',
  '.5',
  '-',
  '+1',
  'NaN',
  'Infinity',
  '1e400',
  '12345678901234567890',
  '"\\/"',
  '"\\u0041"',
  '"\\u001F"',
  '"\\u0008"',
  '"\\u000a"',
  '"\\ud800"',
  '"\ud800"',
  '"\udc00"',
  '"\u0001"',
  '"a',
  '{"a":1,"a":2}',
  '{"a":{"b":1,"b":1}}',
  '{"1":1}',
  '{"1a":1}',
  '{"a":1,}',
  '[1,]',
  'tru',
  'nul',
  '{"a"}',
  '{a:1}',
  '"a"x',
  '['.repeat(100) + ']'.repeat(100),
];

test('canonical JSON: each rule', () => {
  for (const t of yes) {
    assert.ok(canonical(t), `table: ${t}`);
    assert.ok(canonicalMembers(t) !== false, t);
  }
  for (const t of no) assert.is(canonicalMembers(t), false, t);
});

test('canonical JSON: a key seen twice among many keys (the Set) is found', () => {
  const keys = Array.from({ length: 40 }, (_, i) => `"k${i}":${i}`);
  assert.ok(canonicalMembers(`{${keys.join(',')}}`) !== false);
  assert.is(canonicalMembers(`{${keys.join(',')},"k3":1}`), false);
  assert.is(canonicalMembers(`{"k3":1,${keys.join(',')}}`), false);
});

test("canonical JSON: a top-level object's members, their places and escapes", () => {
  const t = '{"a":1,"b\\n":"x","c":"y\\"z","d":{"e":[1]},"f":"plain text that is longer than twenty-four characters"}';
  const m = canonicalMembers(t);
  assert.ok(m !== false);
  const got = [];
  for (let k = 0; k < m.length; k += 5) got.push([t.slice(m[k], m[k + 1]), t.slice(m[k + 2], m[k + 3]), m[k + 4]]);
  assert.equal(got, [
    ['a', '1', 0],
    ['b\\n', '"x"', keyEscaped],
    ['c', '"y\\"z"', valueEscaped],
    ['d', '{"e":[1]}', 0],
    ['f', '"plain text that is longer than twenty-four characters"', 0],
  ]);
  assert.equal(canonicalMembers('[{"a":1}]'), []);
  assert.equal(canonicalMembers('"s"'), []);
});

/** A small deterministic generator (no Math.random: the same cases every run). */
function generator(seed: number): () => number {
  let x = seed;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (x >>> 0) / 0x100000000;
  };
}

test('canonical JSON: generated and altered texts, never a wrong yes', () => {
  const rnd = generator(0x9e3779b9);
  const pick = <T>(a: readonly T[]): T => a[Math.floor(rnd() * a.length)]!;
  const chars = [
    'a',
    'b',
    '"',
    '\\',
    '\n',
    '\u0001',
    '\u001f',
    '\u007f',
    'é',
    '😀',
    '\ud800',
    '\udc00',
    '/',
    '\u2028',
    ' ',
    '1',
  ];
  const text = (): string => Array.from({ length: Math.floor(rnd() * 5) }, () => pick(chars)).join('');
  const value = (depth: number): unknown => {
    const r = rnd();
    if (depth > 3 || r < 0.3)
      return pick([
        0,
        -0,
        1,
        -1,
        1.5,
        1e21,
        1e-7,
        123456789012345,
        1234567890123456789,
        0.1 + 0.2,
        true,
        false,
        null,
        text(),
        'x'.repeat(30),
      ]);
    if (r < 0.55) return Array.from({ length: Math.floor(rnd() * 4) }, () => value(depth + 1));
    const o: Record<string, unknown> = {};
    const n = Math.floor(rnd() * (rnd() < 0.1 ? 30 : 6));
    for (let k = 0; k < n; k++)
      o[pick(['a', 'b', rnd() < 0.1 ? '1' : 'c', '__proto__', 'é', 'x"y', `k${k}`, text()])] = value(depth + 1);
    return o;
  };
  const bits = [
    ' ',
    '\n',
    '\\u0041',
    '\\/',
    '\\u001F',
    '\\b',
    '\\u0008',
    '1.0',
    '1e5',
    '-0',
    '01',
    ',',
    ':',
    '"',
    '{',
    '}',
    '[',
    ']',
    '"a":1',
    'E',
    '.',
    '+',
    '0',
    '\\ud800',
    '"1":2',
    '"a":2',
  ];
  const alter = (t: string): string => {
    for (let n = 1 + Math.floor(rnd() * 3); n > 0; n--) {
      const at = Math.floor(rnd() * (t.length + 1));
      const r = rnd();
      if (r < 0.4) t = t.slice(0, at) + pick(bits) + t.slice(at);
      else if (r < 0.7) t = t.slice(0, at) + t.slice(at + 1 + Math.floor(rnd() * 3));
      else t = t.slice(0, at) + pick(chars) + t.slice(at);
    }
    return t;
  };
  let said = 0;
  for (let k = 0; k < 20_000; k++) {
    const written = JSON.stringify(value(0));
    const t = k % 3 === 0 ? written : alter(written);
    const m = canonicalMembers(t);
    if (m === false) continue;
    said++;
    assert.ok(canonical(t), t);
    const v = JSON.parse(t) as unknown;
    if (v === null || typeof v !== 'object' || Array.isArray(v)) {
      assert.equal(m, [], t);
      continue;
    }
    const o = v as Record<string, unknown>;
    assert.is(m.length / 5, Object.keys(o).length, t);
    for (let q = 0; q < m.length; q += 5) {
      const key = JSON.parse(`"${t.slice(m[q], m[q + 1])}"`) as string;
      assert.is(JSON.stringify(o[key]), t.slice(m[q + 2], m[q + 3]), t);
    }
  }
  // Most generated texts are canonical and most are recognised (the rest only cost a parse).
  assert.ok(said > 4000, `${said}`);
});

test.run();
