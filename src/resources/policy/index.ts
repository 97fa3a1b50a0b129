/**
 * A policy (`system/policies/<name>`): rules of path patterns and operations. Its rules are
 * checked when written (rules.ts: each problem with its field path and position) and
 * compiled by auth/policies.ts.
 */
import { policySchema } from '../schemas.js';
import { resource, type ResourceModule } from '../module.js';
import { policyProblems } from './rules.js';

export const policy: ResourceModule = resource({
  id: 'policy',
  segments: ['system', 'policies'],
  shape: 'list',
  schema: policySchema,
  ordered: new Set(['rules']),
  needsUnsealed: false,
  // What the schema cannot see: a path pattern that does not parse (the schema's own errors,
  // a bad operation or effect, are not reported a second time).
  check: (obj, xPath) =>
    policyProblems(obj)
      .filter((e) => e.info?.code === 'bad-pattern')
      .map((e) => e.rewrap(`${e.message} (${xPath})`, { 'x-path': xPath })),
});
