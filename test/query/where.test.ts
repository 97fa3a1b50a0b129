import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { compileWhere } from '../../src/query/where.js';
import type { JsonObject } from '../../src/lib/json.js';
import type { ApiError } from '../../src/lib/errors.js';

const site: JsonObject = {
  name: 'edge-1',
  type: 'edge',
  'connection-state': { connected: true, since: '2024' },
  'deployed-applications': 3,
  'host-labels': { env: 'prod', zone: ['a', 'b'] },
  labels: { 'system/type': 'edge' },
  hosts: [
    { 'host-id': 'h1', cpus: 4, labels: { gpu: 'yes' } },
    { 'host-id': 'h2', cpus: 8 },
  ],
  a: 5,
  b: 2,
  'a-b': 'dash',
  disabled: false,
  empty: '',
  nothing: null,
  version: '1.10',
  tags: ['x', 'y'],
  text: 'abc',
};

const cases: Array<[string, boolean]> = [
  // Every example form of the where language.
  ["type = 'edge'", true],
  ["type = 'cloud'", false],
  ["type = 'edge' and connection-state/connected = true()", true],
  ['deployed-applications > 0', true],
  ['deployed-applications > 3', false],
  ["starts-with(name, 'edge')", true],
  ["starts-with(name, 'x')", false],
  ["contains(name, 'ge-')", true],
  ["contains(name, 'x')", false],
  ["re-match(name, 'edge-[0-9]')", true],
  ["re-match(name, '^x')", false],
  ["re-match(name, '(?i)^EDGE')", true],
  ["match-labels(host-labels, 'env = prod')", true],
  ["match-labels(host-labels, 'env = dev')", false],
  // Node-sets of several nodes: true when some node satisfies the comparison (§3.4).
  ["tags = 'y'", true],
  ["tags = 'z'", false],
  ["tags != 'x'", true],
  ["'x' != tags", true],
  ["hosts/host-id = 'h2'", true],
  ['hosts/cpus > 6', true],
  ['hosts/cpus < 4', false],
  ['6 < hosts/cpus', true],
  ['4 > hosts/cpus', false],
  ['hosts/cpus = 4', true],
  // Empty node-sets compare false with anything, = and != alike.
  ["missing = 'x'", false],
  ["missing != 'x'", false],
  ["not(missing = 'x')", true],
  ['missing = missing', false],
  // Node-set against node-set: some pair of string-values.
  ['tags = hosts/host-id', false],
  ['hosts/host-id != hosts/host-id', true],
  ['hosts/cpus < hosts/cpus', true],
  ['tags = tags', true],
  // Node-set against boolean: boolean(node-set), where a node holding JSON false is false
  // (the value of a boolean member, not its presence).
  ['connection-state/connected = true()', true],
  ['connection-state/connected = false()', false],
  ['disabled = true()', false],
  ['disabled = false()', true],
  ['not(disabled)', true],
  ['disabled', false],
  ['connection-state/connected', true],
  ['boolean(disabled)', false],
  ['missing = false()', true],
  ['not(missing)', true],
  ["disabled = 'false'", true],
  ["connection-state/connected = 'true'", true],
  // Number against string and node-set text.
  ['version = 1.1', true],
  ["version = '1.1'", false],
  ["'10' > '9'", true],
  ["'10' = 10.0", true],
  ["'abc' < 1", false],
  ["1 = '1.0'", true],
  ["'1' = '1.0'", false],
  ['text > 0', false],
  ['text <= 0', false],
  // NaN compares unequal to everything, itself included.
  ["number('abc') = number('abc')", false],
  ["number('abc') != number('abc')", true],
  ["string(number('')) = 'NaN'", true],
  ["string(number('1e3')) = 'NaN'", true],
  ["string(number('+1')) = 'NaN'", true],
  ["number(' 12 ') = 12", true],
  ["number('-.5') = -0.5", true],
  ['number(true()) = 1', true],
  ['number(missing) != number(missing)', true],
  ["string(a + missing) = 'NaN'", true],
  // boolean() conversions.
  ["boolean('')", false],
  ["boolean('false')", true],
  ['boolean(0)', false],
  ["boolean(number('x'))", false],
  ['boolean(-1)', true],
  ['boolean(missing)', false],
  ['boolean(empty)', true],
  ['boolean(nothing)', true],
  ['true() = 1', true],
  ['false() = 0', true],
  ["true() = 'x'", true],
  ["false() = ''", true],
  ['true() > false()', true],
  // string() of numbers: integers without '.0', no exponent.
  ["string(1) = '1'", true],
  ["string(3.0) = '3'", true],
  ["string(1.5) = '1.5'", true],
  ["string(-0) = '0'", true],
  ["string(1 div 0) = 'Infinity'", true],
  ["string(-1 div 0) = '-Infinity'", true],
  ["string(0 div 0) = 'NaN'", true],
  ["string(1000000000000000000000) = '1000000000000000000000'", true],
  ["string(0.0000001) = '0.0000001'", true],
  ["string(true()) = 'true'", true],
  ["string(deployed-applications) = '3'", true],
  ["string(hosts) = 'h14yes'", true],
  ["string(connection-state) = 'true2024'", true],
  ["string(nothing) = ''", true],
  ["string(missing) = ''", true],
  // Arithmetic, unary minus, and names containing '-'.
  ['a - b = 3', true],
  ["a-b = 'dash'", true],
  ['a -b = 3', true],
  ['a*b = 10', true],
  ['a * b = 10', true],
  ['2 + 3 * 4 = 14', true],
  ['7 div 2 = 3.5', true],
  ['5 mod 2 = 1', true],
  ['-5 mod 2 = -1', true],
  ['5 mod -2 = 1', true],
  ['5.5 mod 2 = 1.5', true],
  ['1 div 0 > 1000000', true],
  ['-a = -5', true],
  ['--a = 5', true],
  ['- a + b = -3', true],
  ['3-1 = 2', true],
  // Paths: '/', '.', '..', '*', predicates.
  ["/name = 'edge-1'", true],
  ["./name = 'edge-1'", true],
  ["connection-state/../name = 'edge-1'", true],
  ["../name = 'edge-1'", false],
  ['count(..) = 0', true],
  ['count(/) = 1', true],
  ['count(hosts/..) = 1', true],
  ['count(hosts) = 2', true],
  ['count(tags) = 2', true],
  ['count(hosts/*) = 5', true],
  ["hosts[2]/host-id = 'h2'", true],
  ["hosts[cpus > 6]/host-id = 'h2'", true],
  ["hosts[labels/gpu = 'yes']/host-id = 'h1'", true],
  ['hosts[last()]/cpus = 8', true],
  ['hosts[position() = 1]/cpus = 4', true],
  ['count(hosts[labels]) = 1', true],
  ["hosts[host-id = 'h2'][1]/cpus = 8", true],
  ["hosts[host-id = 'h2'][2]", false],
  ["tags[. = 'y']", true],
  ['tags[3]', false],
  ["hosts[../name = 'edge-1']/cpus = 8", true],
  // Other functions.
  ["string-compare(name, 'edge-2') = -1", true],
  ["string-compare('b', 'a') = 1", true],
  ['string-compare(name, name) = 0', true],
  ['string-length(name) = 6', true],
  ["concat(name, '/', type) = 'edge-1/edge'", true],
  ["not(type = 'edge')", false],
  // match-labels: arrays are several values; any node of the node-set may match.
  ["match-labels(host-labels, 'zone = b')", true],
  ["match-labels(host-labels, 'zone in {c, a} and !missing')", true],
  ["match-labels(host-labels, 'env != prod or zone not in {a}')", false],
  ["match-labels(hosts/labels, 'gpu')", true],
  ["match-labels(hosts/labels, 'gpu = no')", false],
  ["match-labels(labels, 'system/type = edge')", true],
  ["match-labels(missing, '!x')", false],
  ["match-labels(name, '!x')", false],
  // Fields named like Object.prototype members are absent unless present.
  ["constructor = 'x'", false],
  ['count(constructor) = 0', true],
  ["type = 'edge' or missing", true],
];

for (const [text, want] of cases) {
  test(`${text} → ${want}`, () => assert.is(compileWhere(text).test(site), want));
}

test('one compiled predicate serves many objects', () => {
  const p = compileWhere("type = 'edge' and deployed-applications > 0");
  const items: JsonObject[] = [
    { type: 'edge', 'deployed-applications': 1 },
    { type: 'edge', 'deployed-applications': 0 },
    { type: 'control-tower', 'deployed-applications': 5 },
    { type: 'edge' },
  ];
  assert.equal(
    items.map((i) => p.test(i)),
    [true, false, false, false],
  );
});

test('plain paths against constants (read directly) agree with the general node-set path', () => {
  // './' before a path keeps it off the direct route, so both routes run on the same input.
  const forms = [
    "tags = 'y'",
    "tags != 'x'",
    "'x' != tags",
    'hosts/cpus > 6',
    '6 < hosts/cpus',
    "hosts/cpus >= '8'",
    "hosts/labels/gpu = 'yes'",
    'deployed-applications = 3.0',
    "connection-state = 'true2024'",
    "missing != 'x'",
    'text < 1',
    "version = '1.10'",
    'nothing = 0',
    "nothing = ''",
  ];
  const docs: JsonObject[] = [site, {}, { tags: [] }, { hosts: { cpus: '7' } }, { tags: [['y']] }];
  for (const form of forms) {
    const general = form.replace(/(^|[ (])([a-z])/g, '$1./$2');
    for (const doc of docs)
      assert.is(
        compileWhere(form).test(doc),
        compileWhere(general).test(doc),
        `${form} vs ${general} on ${JSON.stringify(doc)}`,
      );
  }
});

test('a quadratic expression over a long list is refused (where-too-costly), a linear one is not', () => {
  const doc = { 'match-string': Array.from({ length: 20_000 }, (_, i) => `s${i}`) };
  // Each entry compared with every entry: 400 million pairs, refused at the first comparison.
  let code: unknown;
  try {
    compileWhere('count(match-string[. = ../match-string]) > 0').test(doc);
  } catch (err) {
    code = (err as ApiError).info?.code;
  }
  assert.is(code, 'where-too-costly');
  assert.is(compileWhere("match-string = 's19999'").test(doc), true);
  assert.is(compileWhere('count(match-string[. != 0]) = 20000').test(doc), true);
});

test('the budget is per read: a predicate tests again in a later turn (a watch stream)', async () => {
  const doc = { tags: Array.from({ length: 3_000 }, (_, i) => `t${i}`) };
  // 3,000 × 3,000 = 9 million pairs a test: two fit in one budget, three do not.
  const w = compileWhere('tags = tags');
  for (let read = 0; read < 4; read++) {
    assert.is(w.test(doc), true);
    assert.is(w.test(doc), true);
    await new Promise((r) => setImmediate(r));
  }
  assert.throws(() => [1, 2, 3].forEach(() => w.test(doc)), /more than 20000000 steps/);
});

test('a non-object entry has no children', () => {
  assert.is(compileWhere("type = 'x'").test(null), false);
  assert.is(compileWhere("string(.) = 'plain'").test('plain'), true);
});

test.run();
