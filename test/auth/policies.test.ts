/** Policy path patterns (parse errors with positions, matching, specificity) and decisions. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ApiError } from '../../src/lib/errors.js';
import {
  compareSpecificity,
  isProblem,
  matches,
  parsePattern,
  splitPath,
  type PathPattern,
} from '../../src/auth/patterns.js';
import {
  compilePolicies,
  decide,
  policyProblems,
  validatePolicy,
  adminPolicy,
  type Operation,
} from '../../src/auth/policies.js';

function pattern(src: string): PathPattern {
  const p = parsePattern(src);
  if (isProblem(p)) throw new Error(`bad test pattern ${src}: ${p.reason}`);
  return p;
}

test('malformed patterns are rejected at a position', () => {
  const cases: Array<[string, number]> = [
    ['v1/config', 0],
    ['//x', 1],
    ['/v1//x', 4],
    ['/v1/con*', 7],
    ['/v1/***', 4],
    ['/v1/a*b/c', 5],
  ];
  for (const [src, position] of cases) {
    const p = parsePattern(src);
    assert.ok(isProblem(p), `${src} should be rejected`);
    if (isProblem(p)) assert.is(p.position, position, src);
  }
  for (const ok of ['/', '/**', '/v1/config/*', '/v1/config/volga/**', '/v1/**/x', '/v1/config/']) {
    assert.not.ok(isProblem(parsePattern(ok)), ok);
  }
});

test('matching: * is one component, ** any number (zero included)', () => {
  const cases: Array<[string, string, boolean]> = [
    ['/v1/config/*', '/v1/config/sites', true],
    ['/v1/config/*', '/v1/config/sites/a', false],
    ['/v1/config/*', '/v1/config', false],
    ['/v1/config/volga/**', '/v1/config/volga', true],
    ['/v1/config/volga/**', '/v1/config/volga/webhooks/h1', true],
    ['/v1/config/volga/**', '/v1/config/volgax', false],
    ['/v1/config/volga/**', '/v1/state/volga/webhooks', false],
    ['/**', '/v1/state/volga/webhooks/h/restart', true],
    ['/**', '/', true],
    ['/v1/**/restart', '/v1/state/volga/webhooks/h/restart', true],
    ['/v1/**/restart', '/v1/state/volga/webhooks/h', false],
    ['/v1/*/volga/**', '/v1/state/volga/topics/t', true],
    ['/v1/login', '/v1/login', true],
  ];
  for (const [p, path, want] of cases) assert.is(matches(pattern(p), splitPath(path)), want, `${p} ~ ${path}`);
});

test('specificity: literal > * > **, and an ended pattern beats **', () => {
  const moreSpecific: Array<[string, string]> = [
    ['/v1/config/volga/webhooks/*', '/v1/config/**'],
    ['/v1/config/volga/**', '/v1/config/*/webhooks'],
    ['/v1/config/volga', '/v1/config/volga/**'],
    ['/v1/config/*', '/v1/config/**'],
    ['/v1/config/volga/webhooks/h1', '/v1/config/volga/webhooks/*'],
  ];
  for (const [a, b] of moreSpecific) {
    assert.ok(compareSpecificity(pattern(a), pattern(b)) < 0, `${a} before ${b}`);
    assert.ok(compareSpecificity(pattern(b), pattern(a)) > 0, `${b} after ${a}`);
  }
  assert.is(compareSpecificity(pattern('/v1/*'), pattern('/v1/*')), 0);
});

const policy = (name: string, rules: Array<[string, Operation[], 'allow' | 'deny']>) => ({
  name,
  value: { name, rules: rules.map(([path, operations, effect]) => ({ path, operations, effect })) },
});

test('decisions: the most specific rule listing the operation wins; deny wins ties; default deny', () => {
  const compiled = compilePolicies([
    policy('ops', [
      ['/v1/config/**', ['read'], 'allow'],
      ['/v1/config/volga/**', ['read', 'create', 'update', 'delete'], 'allow'],
      ['/v1/config/volga/webhooks/secret-hook', ['read', 'update'], 'deny'],
      ['/v1/state/volga/webhooks/*/restart', ['execute'], 'allow'],
    ]),
    policy('restrict', [
      ['/v1/config/system/**', ['read'], 'deny'],
      ['/v1/config/volga/**', ['delete'], 'deny'],
    ]),
  ]);
  const cases: Array<[string, Operation, boolean]> = [
    ['/v1/config/sites/s1', 'read', true],
    ['/v1/config/sites/s1', 'update', false],
    ['/v1/config/volga/webhooks/h1', 'create', true],
    ['/v1/config/volga/webhooks/h1', 'delete', false], // equally specific allow and deny: deny
    ['/v1/config/volga/webhooks/secret-hook', 'read', false],
    ['/v1/config/volga/webhooks/secret-hook', 'create', true], // the deny rule does not list create
    ['/v1/config/system/users/admin', 'read', false],
    ['/v1/state/volga/webhooks/h1/restart', 'execute', true],
    ['/v1/state/volga/webhooks/h1', 'read', false],
    ['/v1/config/volga/../system/users', 'read', false],
    ['/v1/config/sites/s1?fields=name', 'read', true],
  ];
  for (const [path, op, want] of cases) assert.is(decide(compiled, path, op).allowed, want, `${op} ${path}`);
  assert.is(decide(compiled, '/v1/config/volga/webhooks/secret-hook', 'read').rule?.origin, 'ops#2');
});

test('the built-in admin policy allows every operation on every path', () => {
  const compiled = compilePolicies([{ name: 'admin', value: adminPolicy }]);
  for (const op of ['read', 'create', 'update', 'delete', 'execute'] as const) {
    assert.ok(decide(compiled, '/v1/config/system/users/x', op).allowed);
  }
});

test('policy validation lists every problem with its field path (and position for patterns)', () => {
  const problems = policyProblems({
    name: 'p',
    rules: [
      { path: '/v1/config/web*', operations: ['read'], effect: 'allow' },
      { path: '/v1/ok', operations: ['read', 'write'], effect: 'maybe' },
      { path: 3, operations: [], effect: 'deny' },
      'nope',
    ],
  });
  const info = problems.map((p) => [p.code, p.info?.path, p.info?.position]);
  assert.equal(info, [
    ['invalid-value', '/rules/0/path', 14],
    ['invalid-value', '/rules/1/operations/1', undefined],
    ['invalid-value', '/rules/1/effect', undefined],
    ['invalid-value', '/rules/2/path', undefined],
    ['invalid-value', '/rules/2/operations', undefined],
    ['invalid-value', '/rules/3', undefined],
  ]);
  assert.equal(
    policyProblems({ name: 'p' }).map((p) => p.info?.path),
    ['/rules'],
  );
  try {
    validatePolicy({ name: 'p', rules: [{ path: 'x', operations: ['read'], effect: 'allow' }] });
    assert.unreachable('should throw');
  } catch (err) {
    assert.ok(err instanceof ApiError);
    assert.is(err.status, 400);
    assert.is(err.info?.code, 'bad-pattern');
  }
  validatePolicy(adminPolicy);
});

test('a missing policy adds no rule; an invalid stored one denies everything (fails closed)', () => {
  const everything = { name: 'all', value: adminPolicy };
  const withMissing = compilePolicies([everything, { name: 'missing', value: undefined }]);
  assert.is(decide(withMissing, '/v1/config', 'read').allowed, true);
  const withBroken = compilePolicies([
    everything,
    {
      name: 'broken',
      value: {
        name: 'broken',
        rules: [
          { path: '/v1/config/system/**', operations: ['read'], effect: 'deny' },
          { path: 'nope', operations: ['read'], effect: 'deny' },
        ],
      },
    },
  ]);
  assert.equal(withBroken.invalid, ['broken']);
  const d = decide(withBroken, '/v1/config/sites', 'read');
  assert.is(d.allowed, false);
  assert.is(d.invalidPolicy, 'broken');
});

test.run();
