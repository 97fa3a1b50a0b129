import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { expectApiError } from '../helpers/assert.js';
import { compileLabelExpr, type Labels } from '../../src/query/labels.js';

const labels: Labels = {
  env: 'prod',
  zone: ['a', 'b'],
  'system/type': 'edge',
  'system/name': 'stockholm-1',
  'gpu.vendor-x_y': 'yes',
  empty: '',
  Case: 'Upper',
};

const cases: Array<[string, boolean]> = [
  ['env = prod', true],
  ['env = dev', false],
  ['env=prod', true],
  ['env != dev', true],
  ['env != prod', false],
  ['missing != prod', true],
  ['env', true],
  ['missing', false],
  ['!missing', true],
  ['!env', false],
  ['empty', true],
  ["empty = ''", true],
  ['env in {dev, prod}', true],
  ['env in {dev,test}', false],
  ['env in {}', false],
  ['env not in {dev, test}', true],
  ['env not in {prod}', false],
  ['missing in {a}', false],
  ['missing not in {a}', true],
  // A label with several values matches '=' when any value does.
  ['zone = b', true],
  ['zone = c', false],
  ['zone != a', false],
  ['zone in {c, b}', true],
  ['zone not in {b}', false],
  // Keys with '/', '.', '-', '_'.
  ['system/type = edge', true],
  ['system/name = stockholm-1', true],
  ['gpu.vendor-x_y = yes', true],
  // Quoted values and keys.
  ["env = 'prod'", true],
  ['env = "prod"', true],
  ['"system/type" = edge', true],
  ["system/name in {'stockholm-1', other}", true],
  ["'not' = x", false],
  // Case sensitive.
  ['case = Upper', false],
  ['Case = upper', false],
  ['Case = Upper', true],
  // and binds tighter than or; not and parentheses.
  ['env = dev and zone = a or system/type = edge', true],
  ['env = dev and (zone = a or system/type = edge)', false],
  ['env = prod or env = dev and missing', true],
  ['(env = prod or env = dev) and missing', false],
  ['not env = dev', true],
  ['not (env = prod and zone = a)', false],
  ['not not env', true],
  ['not missing and !other', true],
  ['constructor', false],
];
for (const [text, want] of cases) {
  test(`${text} → ${want}`, () => assert.is(compileLabelExpr(text).test(labels), want));
}

const errors: Array<[string, string, number]> = [
  ['', 'empty', 0],
  ['  ', 'empty', 0],
  ['env =', 'syntax', 5],
  ['= prod', 'syntax', 0],
  ['env = prod and', 'syntax', 14],
  ['env = prod or or x', 'syntax', 14],
  ['env prod', 'syntax', 4],
  ['env in dev', 'syntax', 7],
  ['env in {a b}', 'syntax', 10],
  ['env in {a,', 'syntax', 10],
  ['env not x', 'syntax', 8],
  ['(env = prod', 'syntax', 11],
  ['env = prod)', 'syntax', 10],
  ['!', 'syntax', 1],
  ["env = 'prod", 'unterminated-string', 6],
  ['and = x', 'syntax', 0],
  ['env == prod', 'syntax', 5],
];
for (const [text, code, position] of errors) {
  test(`error ${code} at ${position}: ${JSON.stringify(text)}`, () => {
    expectApiError(() => compileLabelExpr(text), 'invalid-value', { code, position });
  });
}

test.run();
