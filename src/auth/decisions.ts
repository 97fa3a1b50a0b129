/**
 * Policy decisions: may a principal do an operation on an absolute path (in a tenant)? Its
 * tenant must be one the principal reaches, a root-only path needs a principal of the root
 * tenant, and then its compiled policies decide (policies.ts). A refusal is the ApiError that
 * names why (the deny rule, the invalid policy, or that no policy allows it).
 */
import { ApiError } from '../lib/errors.js';
import { isProblem, matches, parsePattern, splitPath, type PathPattern } from '../resources/policy/patterns.js';
import { decide, type Operation } from './policies.js';
import type { Principal } from './principal.js';

/**
 * Resources shared by every tenant of the process — the secret store's seal — are reached
 * only by principals of the root tenant, whatever a subtenant's own policies say. (Bus topics
 * are each tenant's own: the topics API shows a caller its tenant's only, bus/tenant-topics.ts.)
 */
const rootOnlyPatterns: readonly PathPattern[] = ['/v1/strongbox/**'].map((src) => {
  const p = parsePattern(src);
  if (isProblem(p)) throw new Error(`bad built-in pattern ${src}`);
  return p;
});

/** The decision function of a process whose root tenant is `root`, memoised per principal. */
export function createDecisions(
  root: string,
): (principal: Principal, absolutePath: string, op: Operation, tenant: string | undefined) => ApiError | undefined {
  /**
   * Decisions per principal object (auth.ts caches principals), so repeated requests skip pattern matching:
   * path → (operation and tenant) → refusal, null when allowed. Keyed by the path first, a
   * string the caller usually keeps (model/resources.ts xPath), so no key is built per request.
   */
  const decisions = new WeakMap<Principal, { size: number; byPath: Map<string, Map<string, ApiError | null>> }>();

  function check(
    principal: Principal,
    absolutePath: string,
    op: Operation,
    tenant: string | undefined,
  ): ApiError | undefined {
    let memo = decisions.get(principal);
    if (!memo) {
      memo = { size: 0, byPath: new Map() };
      decisions.set(principal, memo);
    }
    const key = tenant === undefined ? op : `${op} ${tenant}`;
    let forPath = memo.byPath.get(absolutePath);
    const hit = forPath?.get(key);
    if (hit !== undefined) return hit ?? undefined;
    const result = checkUncached(principal, absolutePath, op, tenant);
    if (memo.size < 1000) {
      if (!forPath) {
        forPath = new Map();
        memo.byPath.set(absolutePath, forPath);
      }
      forPath.set(key, result ?? null);
      memo.size++;
    }
    return result;
  }

  function checkUncached(
    principal: Principal,
    absolutePath: string,
    op: Operation,
    tenant: string | undefined,
  ): ApiError | undefined {
    if (tenant !== undefined && !principal.tenants.has(tenant)) {
      return new ApiError('not-found', `Cannot find ${absolutePath}`, { code: 'not-found', path: absolutePath });
    }
    if (principal.tenant !== root) {
      const segments = splitPath(absolutePath.split('?')[0] ?? '');
      if (rootOnlyPatterns.some((p) => matches(p, segments))) {
        return new ApiError(
          'forbidden',
          `Cannot ${op} ${absolutePath}: it is shared by all tenants, so only users of the root tenant may`,
          { code: 'root-tenant-only', path: absolutePath, operation: op },
        );
      }
    }
    const d = decide(principal.policies, absolutePath, op);
    if (d.allowed) return undefined;
    const why =
      d.invalidPolicy !== undefined
        ? `policy ${d.invalidPolicy} of this user is not valid, so everything is denied until it is fixed`
        : d.rule
          ? `a deny rule of policy ${d.rule.origin.split('#')[0]} (path ${d.rule.pattern.source})`
          : 'no policy of this user allows it';
    return new ApiError('forbidden', `Cannot ${op} ${absolutePath}: ${why}`, {
      code: 'forbidden',
      path: absolutePath,
      operation: op,
      ...(d.rule ? { rule: d.rule.origin } : {}),
      ...(d.invalidPolicy !== undefined ? { 'invalid-policy': d.invalidPolicy } : {}),
    });
  }

  return check;
}
