import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { expectApiError } from '../helpers/assert.js';
import { compileMatchPath } from '../../src/query/matchpath.js';

const cases: Array<[string, string, boolean]> = [
  ['/v1/config/volga/webhooks/x', '/v1/config/volga/webhooks/x', true],
  ['/v1/config/volga/webhooks/x', '/v1/config/volga/webhooks/y', false],
  ['/v1/config/volga/webhooks/x', '/v1/config/volga/webhooks', false],
  ['/v1/config/volga/webhooks/*', '/v1/config/volga/webhooks/x', true],
  ['/v1/config/volga/webhooks/*', '/v1/config/volga/webhooks', false],
  ['/v1/config/volga/webhooks/*', '/v1/config/volga/webhooks/x/y', false],
  ['/v1/config/*/webhooks/*', '/v1/config/volga/webhooks/x', true],
  ['/v1/config/*', '/v1/config/sites', true],
  ['/v1/config/**', '/v1/config/sites', true],
  ['/v1/config/**', '/v1/config/system/settings', true],
  ['/v1/config/**', '/v1/config/volga/webhooks/x', true],
  ['/v1/config/**', '/v1/config', false],
  ['/v1/config/**', '/v1/state/sites', false],
  ['/v1/*/sites/**', '/v1/state/sites/s1', true],
  ['/**', '/v1', true],
  ['/v1/config/sites/', '/v1/config/sites', true],
  ['v1/config/sites', '/v1/config/sites', true],
  ['/v1/config/sites', 'v1/config/sites', true],
  ['/v1/config/Sites', '/v1/config/sites', false],
];
for (const [pattern, path, want] of cases) {
  test(`${pattern} ${want ? 'matches' : 'does not match'} ${path}`, () =>
    assert.is(compileMatchPath(pattern)(path), want));
}

const prefixes: Array<[string, string]> = [
  ['/v1/config/volga/webhooks/*', '/v1/config/volga/webhooks'],
  ['/v1/config/**', '/v1/config'],
  ['/v1/config/sites/s1', '/v1/config/sites/s1'],
  ['/v1/*/sites', '/v1'],
  ['/*', '/'],
];
for (const [pattern, prefix] of prefixes) {
  test(`prefix of ${pattern} is ${prefix}`, () => {
    assert.is(compileMatchPath(pattern).prefix, prefix);
  });
}

const errors: Array<[string, string, number]> = [
  ['', 'empty', 0],
  ['/', 'empty', 0],
  ['/v1//config', 'empty-component', 4],
  ['//v1', 'empty-component', 1],
  ['/v1/**/sites', 'descendant-not-last', 4],
  ['/**/**', 'descendant-not-last', 1],
  ['/v1/config/volga/webhooks/w*', 'partial-wildcard', 27],
  ['/v1/config/**x', 'partial-wildcard', 11],
  ['/v1/config/volga/../volga/webhooks/*', 'dot-segment', 17],
  ['/v1/./config', 'dot-segment', 4],
];
for (const [pattern, code, position] of errors) {
  test(`match-path error ${code} at ${position}: ${JSON.stringify(pattern)}`, () => {
    expectApiError(() => compileMatchPath(pattern), 'invalid-query', {
      code: code,
      position: position,
      parameter: 'match-path',
    });
  });
}

test.run();
