/**
 * Policies: named lists of rules `{path, operations, effect}` stored at
 * `/v1/config/system/policies/<name>`. A principal's policies are compiled once into one
 * list of rules sorted most specific first (deny before allow when equally specific); a
 * decision is then the first rule that matches the path and lists the operation. No
 * matching rule means deny.
 */
import { combine } from '../lib/errors.js';
import { isObject, type JsonObject } from '../lib/json.js';
import {
  compareSpecificity,
  isProblem,
  matches,
  parsePattern,
  splitPath,
  type PathPattern,
} from '../resources/policy/patterns.js';
import { isOperation, operations, policyProblems, type Operation } from '../resources/policy/rules.js';

export { operations, policyProblems, type Operation };
export type Effect = 'allow' | 'deny';

export type CompiledRule = {
  pattern: PathPattern;
  operations: ReadonlySet<Operation>;
  effect: Effect;
  /** Where the rule came from, for error-details: `<policy>#<index>`. */
  origin: string;
};

export type CompiledPolicies = {
  readonly names: readonly string[];
  readonly rules: readonly CompiledRule[];
  /** Stored policies that are not valid: while there is one, everything is denied. */
  readonly invalid: readonly string[];
};

/** Built-in policy `admin`: everything in the own tenant tree (and, through it, subtenants). */
export const adminPolicyName = 'admin';
export const adminPolicy: JsonObject = {
  name: adminPolicyName,
  rules: [{ path: '/**', operations: [...operations], effect: 'allow' }],
};

/** Throws one 400 listing every problem (the write path calls this before storing a policy). */
export function validatePolicy(obj: unknown): void {
  const problems = policyProblems(obj);
  if (problems.length > 0) throw combine(problems);
}

/**
 * Compiles the named policies (already fetched). A missing one contributes no rule. An
 * invalid one (written around validatePolicy) fails closed: skipping it could drop a deny
 * rule and allow more than intended. Rules are sorted once here, never per request.
 */
export function compilePolicies(named: ReadonlyArray<{ name: string; value: unknown }>): CompiledPolicies {
  const rules: CompiledRule[] = [];
  const invalid: string[] = [];
  for (const { name, value } of named) {
    if (value === undefined) continue;
    if (!isObject(value) || policyProblems(value).length > 0 || !Array.isArray(value.rules)) {
      invalid.push(name);
      continue;
    }
    value.rules.forEach((rule, i) => {
      if (!isObject(rule) || typeof rule.path !== 'string' || !Array.isArray(rule.operations)) return;
      const pattern = parsePattern(rule.path);
      if (isProblem(pattern)) return;
      rules.push({
        pattern,
        operations: new Set(rule.operations.filter(isOperation)),
        effect: rule.effect === 'allow' ? 'allow' : 'deny',
        origin: `${name}#${i}`,
      });
    });
  }
  rules.sort(
    (a, b) => compareSpecificity(a.pattern, b.pattern) || (a.effect === b.effect ? 0 : a.effect === 'deny' ? -1 : 1),
  );
  return { names: named.map((n) => n.name), rules, invalid };
}

export type Decision = { allowed: boolean; rule: CompiledRule | undefined; invalidPolicy?: string };

/** The decision for `op` on an absolute API path (`/v1/config/...`, query string ignored). */
export function decide(policies: CompiledPolicies, absolutePath: string, op: Operation): Decision {
  const broken = policies.invalid[0];
  if (broken !== undefined) return { allowed: false, rule: undefined, invalidPolicy: broken };
  const path = splitPath(absolutePath.split('?')[0] ?? '');
  // Dot components could make a pattern match a path that names something else: never allowed.
  if (path.some((s) => s === '.' || s === '..')) return { allowed: false, rule: undefined };
  for (const rule of policies.rules) {
    if (rule.operations.has(op) && matches(rule.pattern, path)) return { allowed: rule.effect === 'allow', rule };
  }
  return { allowed: false, rule: undefined };
}
