/**
 * The rules of a policy object as written: `{path, operations, effect}` items whose path is a
 * pattern (patterns.ts). Checked here when written; auth/policies.ts compiles them for decisions.
 */
import { ApiError, type DetailFor } from '../../lib/errors.js';
import { isObject } from '../../lib/json.js';
import { isProblem, parsePattern } from './patterns.js';

export const operations = ['read', 'create', 'update', 'delete', 'execute'] as const;
export type Operation = (typeof operations)[number];

export function isOperation(v: unknown): v is Operation {
  return typeof v === 'string' && (operations as readonly string[]).includes(v);
}

/**
 * Every problem of a policy object, each naming its field path (e.g. `/rules/2/path`) and,
 * for patterns, the character position. Empty when the policy is valid.
 */
export function policyProblems(obj: unknown): ApiError[] {
  const bad = (message: string, path: string, extra?: { position?: number; code?: DetailFor<'invalid-value'> }) =>
    new ApiError('invalid-value', message, {
      code: extra?.code ?? 'invalid-policy',
      path,
      ...(extra?.position !== undefined ? { position: extra.position } : {}),
    });
  if (!isObject(obj)) return [bad('Cannot accept the policy: it must be an object with name and rules', '')];
  const rules = obj.rules;
  if (!Array.isArray(rules))
    return [bad('Cannot accept the policy: rules must be a list of {path, operations, effect}', '/rules')];
  const problems: ApiError[] = [];
  rules.forEach((rule, i) => {
    const at = `/rules/${i}`;
    if (!isObject(rule)) {
      problems.push(bad(`Cannot accept rule ${i}: it must be an object {path, operations, effect}`, at));
      return;
    }
    if (typeof rule.path !== 'string')
      problems.push(bad(`Cannot accept rule ${i}: path must be a string such as /v1/config/volga/**`, `${at}/path`));
    else {
      const p = parsePattern(rule.path);
      if (isProblem(p))
        problems.push(
          bad(
            `Cannot accept rule ${i} path ${JSON.stringify(rule.path)}: ${p.reason} at position ${p.position}`,
            `${at}/path`,
            { position: p.position, code: 'bad-pattern' },
          ),
        );
    }
    if (!Array.isArray(rule.operations) || rule.operations.length === 0) {
      problems.push(
        bad(
          `Cannot accept rule ${i}: operations must be a non-empty list of ${operations.join(', ')}`,
          `${at}/operations`,
        ),
      );
    } else {
      rule.operations.forEach((op, j) => {
        if (!isOperation(op))
          problems.push(
            bad(
              `Cannot accept rule ${i}: operation ${JSON.stringify(op)} is not one of ${operations.join(', ')}`,
              `${at}/operations/${j}`,
            ),
          );
      });
    }
    if (rule.effect !== 'allow' && rule.effect !== 'deny')
      problems.push(bad(`Cannot accept rule ${i}: effect must be allow or deny`, `${at}/effect`));
  });
  return problems;
}
