import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ApiError } from '../../src/lib/errors.js';
import { compileTemplate, knownVariable, type Lookup } from '../../src/expand/template.js';

const declared = new Set([
  'NAME',
  'MULTI',
  'QUOTED',
  'SQUOTED',
  'EMPTY',
  'TOKEN',
  'MISSING',
  'HALF',
  'DQ',
  'PATHY',
  'LONE',
]);
const opts = { field: 'data', isDefined: (n: string) => knownVariable(n, declared) };

const values: Record<string, string> = {
  NAME: 'world',
  MULTI: 'a: 1\nb: 2\n\nc: 3',
  QUOTED: '"x"',
  SQUOTED: "'x'",
  EMPTY: '',
  TOKEN: 's3cr3t',
  HALF: '"x',
  DQ: '"',
  PATHY: '../admin?x=1#f é%zz',
  LONE: 'a\uD800b',
  TOPIC: 'sensors',
  MSG: '{"payload":{"temp":21}}',
  'SYS_DNS_ZONES[default]': 'local.example',
  'SYS_SITE_LABELS[system/name]': 'edge-1',
};
const lookup: Lookup = (n) => values[n];

// [template, expected rendering]
const renders: Array<[string, string]> = [
  ['plain text', 'plain text'],
  ['', ''],
  ['hello ${NAME}!', 'hello world!'],
  ['${NAME}${NAME}', 'worldworld'],
  ['${ NAME }', 'world'],
  ['$${NAME}', '${NAME}'],
  ['$$${NAME}', '$${NAME}'],
  ['$$', '$$'],
  ['$$ and $x and $', '$$ and $x and $'],
  ['cost: 5$ ${NAME}', 'cost: 5$ world'],
  ['{"a": {"b": "${NAME}"}}', '{"a": {"b": "world"}}'],
  ['}{ ${NAME} }{', '}{ world }{'],
  ['${EMPTY}', ''],
  ['https://${SYS_DNS_ZONES[default]}/hook', 'https://local.example/hook'],
  ['${SYS_SITE_LABELS[system/name]}', 'edge-1'],
  // indent: every line, the first and empty ones included
  ['${MULTI | indent 2}', '  a: 1\n  b: 2\n  \n  c: 3'],
  ['${NAME | indent 0}', 'world'],
  ['${EMPTY | indent 3}', '   '],
  ['${NAME|indent 1|squote}', "' world'"],
  // replace: all occurrences, groups, regex syntax, both quote styles
  ['${MULTI | replace "\\n" ", "}', 'a: 1, b: 2, , c: 3'],
  ['${MULTI | replace ([a-c]):\\s(\\d) $2=$1}', '1=a\n2=b\n\n3=c'],
  ['${NAME | replace o 0}', 'w0rld'],
  ['${NAME | replace (?i)WOR "$$"}', '$ld'],
  ['${NAME | replace x(y)? "<$1>"}', 'world'],
  ['${NAME | replace (w)(o) "$3$1"}', '$3wrld'],
  ['${NAME | replace "r" "\\"\\\\"}', 'wo"\\ld'],
  ["${NAME | replace 'r' 'it''s'}", "woit'sld"],
  ['${NAME | replace "\\d" X}', 'world'],
  ['${TOKEN | replace "\\d" X}', 'sXcrXt'],
  ['${NAME | replace w "a b|c}"}', 'a b|c}orld'],
  ['${NAME | replace ^ ""}', 'world'],
  // quoting functions
  ['${NAME | squote}', "'world'"],
  ['${NAME | dquote}', '"world"'],
  ['${QUOTED | dquote}', '""x""'],
  ['${QUOTED | squote}', '\'"x"\''],
  ['${NAME | quote}', '"world"'],
  ['${QUOTED | quote}', '"x"'],
  ['${SQUOTED | quote}', "'x'"],
  ['${EMPTY | quote}', '""'],
  ['${HALF | quote}', '""x"'],
  ['${DQ | quote}', '"""'],
  ["${NAME | replace w '\"' | quote}", '""orld"'],
  ['Bearer ${TOKEN}', 'Bearer s3cr3t'],
  // $` and $': the text before and after the match
  ['${NAME | replace r "[$`|$\']"}', 'wo[wo|ld]ld'],
  // urlencode: one URL component, whatever the value holds
  [
    'https://h/d/${PATHY | urlencode}?t=${TOPIC | urlencode}',
    'https://h/d/..%2Fadmin%3Fx%3D1%23f%20%C3%A9%25zz?t=sensors',
  ],
  ['${LONE | urlencode}', 'a%EF%BF%BDb'],
];
for (const [text, expected] of renders) {
  test(`renders ${JSON.stringify(text)}`, () => {
    const t = compileTemplate(text, opts);
    assert.equal(t.render(lookup), { ok: true, value: expected });
  });
}

// [template, error-info code, position]
const errors: Array<[string, string, number]> = [
  ['abc ${NAME', 'unterminated-expression', 4],
  ['${', 'unterminated-expression', 0],
  ['x ${ NAME |', 'unterminated-expression', 2],
  ['${NAME | indent', 'unterminated-expression', 0],
  ['${NAME | replace "a', 'unterminated-string', 17],
  ["${NAME | replace 'a'' b}", 'unterminated-string', 17],
  ['${}', 'expected-variable', 2],
  ['${ | quote}', 'expected-variable', 3],
  ['${NAME | }', 'expected-function', 9],
  ['${NAME || quote}', 'expected-function', 8],
  ['${NA-ME}', 'unexpected-character', 4],
  ['${NAME quote}', 'unexpected-character', 7],
  ['${NAME | replace "a"b c}', 'unexpected-character', 20],
  ['${SYS_SITE_LABELS[]}', 'missing-index', 17],
  ['${SYS_SITE_LABELS[a}', 'unexpected-character', 19],
  ['${SYS_SITE_LABELS[a', 'unterminated-expression', 0],
  ['${NAME | upper}', 'unknown-function', 9],
  ['${NAME | constructor}', 'unknown-function', 9],
  ['${NAME | indent}', 'wrong-arity', 9],
  ['${NAME | indent 2 3}', 'wrong-arity', 18],
  ['${NAME | quote x}', 'wrong-arity', 15],
  ['${NAME | replace a}', 'wrong-arity', 9],
  ['${NAME | indent -1}', 'invalid-integer', 16],
  ['${NAME | indent 1.5}', 'invalid-integer', 16],
  ['${NAME | indent x}', 'invalid-integer', 16],
  ['${NAME | indent 100000}', 'invalid-integer', 16],
  ['ok ${UNDECLARED}', 'undefined-variable', 5],
  ['${NAME} ${ OTHER | quote}', 'undefined-variable', 11],
  ['${msg}', 'undefined-variable', 2],
  ['${SYS_OTHER[x]}', 'undefined-variable', 2],
  // replace patterns: compiled at compile time; position is in the template text
  ['${NAME | replace (a)\\1 x}', 'regex-unsupported', 20],
  ['${NAME | replace "a(?=b)" x}', 'regex-unsupported', 19],
  ['${NAME | replace ab[ x}', 'regex-syntax', 19],
];
for (const [text, code, position] of errors) {
  test(`rejects ${JSON.stringify(text)} with ${code} at ${position}`, () => {
    try {
      compileTemplate(text, { ...opts, field: 'headers[1].value' });
      assert.unreachable('compiled');
    } catch (err) {
      assert.instance(err, ApiError);
      const e = err as ApiError;
      assert.is(e.status, 400);
      assert.is(e.code, 'invalid-value');
      assert.is(e.info?.code, code);
      assert.is(e.info?.position, position);
      assert.is(e.info?.path, 'headers[1].value');
    }
  });
}

test('variables lists the full names; static templates render without lookups', () => {
  const t = compileTemplate('${NAME} ${SYS_DNS_ZONES[default]} ${NAME|quote}', opts);
  assert.equal([...t.variables].sort(), ['NAME', 'SYS_DNS_ZONES[default]']);
  assert.is(t.static, false);
  const s = compileTemplate('https://example.com/$${x}', opts);
  assert.is(s.static, true);
  assert.is(s.variables.size, 0);
  assert.equal(
    s.render(() => {
      throw new Error('static templates do not look up');
    }),
    { ok: true, value: 'https://example.com/${x}' },
  );
});

test('a missing value at render time is a result, not an exception', () => {
  const t = compileTemplate('a ${NAME} b ${MISSING | quote} c ${SYS_SITE_LABELS[nope]}', opts);
  const r = t.render(lookup);
  assert.is(r.ok, false);
  if (!r.ok) {
    assert.is(r.variable, 'MISSING');
    assert.type(r.reason, 'string');
  }
  const r2 = t.render((n) => (n === 'SYS_SITE_LABELS[nope]' ? undefined : 'v'));
  assert.equal(r2.ok ? null : r2.variable, 'SYS_SITE_LABELS[nope]');
});

test('a template renders again and again with different values', () => {
  const t = compileTemplate('${NAME | replace o 0 | dquote}', opts);
  assert.equal(
    t.render(() => 'foo'),
    { ok: true, value: '"f00"' },
  );
  assert.equal(
    t.render(() => 'boo'),
    { ok: true, value: '"b00"' },
  );
});

test('isDefined receives the full indexed name', () => {
  const seen: string[] = [];
  compileTemplate('${SYS_SITE_LABELS[app.io/role]}${X}', {
    field: 'url',
    isDefined: (n) => {
      seen.push(n);
      return true;
    },
  });
  assert.equal(seen, ['SYS_SITE_LABELS[app.io/role]', 'X']);
});

test('knownVariable: built-ins, indexed families, declared names', () => {
  const d = new Set(['MY_VAR']);
  for (const n of [
    'MSG',
    'TOPIC',
    'MSG_HOST',
    'MSG_MTIME',
    'MSG_ORIGIN',
    'MSG_PAYLOAD',
    'MSG_PRODUCER_NAME',
    'MSG_REMAIN',
    'MSG_SEQNO',
    'MSG_TIME',
    'SYS_SITE',
    'SYS_TENANT',
    'SYS_GLOBAL_DOMAIN',
    'SYS_DNS_ZONES[default]',
    'SYS_SITE_LABELS[x]',
    'MY_VAR',
  ]) {
    assert.ok(knownVariable(n, d), n);
  }
  for (const n of ['msg', 'OTHER', 'SYS_SITE_LABELS[]', 'SYS_DNS_ZONES', 'MSG_X', 'SYS_OTHER[a]']) {
    assert.not.ok(knownVariable(n, d), n);
  }
});

test('json templates: json is marked only when the result is valid JSON (and then parsing is skipped)', () => {
  const jsonOpts = { ...opts, json: true };
  const marked = (template: string) => {
    const r = compileTemplate(template, jsonOpts).render(lookup);
    return r.ok && r.json === true;
  };
  // Inside a string, or as a whole value that is JSON itself: valid for sure.
  assert.ok(marked('{"site":"${NAME}","t":${MSG},"n":"${EMPTY}"}'));
  assert.ok(marked('[${MSG}, ${MSG}]'));
  assert.ok(marked('{"a":1}'));
  // A value that would break the string, or is no JSON value, or a slot beside a literal token: unsure.
  assert.not.ok(marked('{"a":"${QUOTED}"}'));
  assert.not.ok(marked('{"a":"${MULTI}"}'));
  assert.not.ok(marked('{"a":${NAME}}'));
  assert.not.ok(marked('{"a":1${MSG}}'));
  assert.not.ok(marked('{"a":"\\${NAME}"}'));
  assert.not.ok(marked('{${NAME}}'));
  assert.not.ok(marked('{"a":1'));
  // Soundness over many templates and values: marked implies JSON.parse accepts it.
  const pieces = ['{', '}', '[', ']', '"', ':', ',', ' ', '1', 'a', '\\', '"k":', '${V}', '${V}', '${V}'];
  const vals = ['', '1', '-2.5e3', 'x', '"', '\\', '{"a":[1]}', ' true ', 'null', '\n', 'ab c', '01', '[1,'];
  let seed = 7;
  const rand = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2147483648), seed % n);
  let sound = 0;
  for (let i = 0; i < 4000; i++) {
    let template = '';
    for (let j = rand(10) + 1; j > 0; j--) template += pieces[rand(pieces.length)];
    const t = compileTemplate(template, { field: 'data', isDefined: () => true, json: true });
    for (let j = 0; j < 4; j++) {
      const v = vals[rand(vals.length)]!;
      const r = t.render(() => v);
      if (!r.ok || r.json !== true) continue;
      sound++;
      try {
        JSON.parse(r.value);
      } catch {
        assert.unreachable(`${JSON.stringify(template)} with ${JSON.stringify(v)} gave ${JSON.stringify(r.value)}`);
      }
    }
  }
  assert.ok(sound > 100, `only ${sound} marked results were checked`);
});

test.run();
