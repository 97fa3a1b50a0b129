/**
 * A policy (`system/policies/<name>`): rules of path patterns and operations. Its rules are
 * checked when written (each problem with its field path and position) and compiled by auth/.
 */
import { policyProblems } from '../auth/policies.js';
import { policySchema } from './schemas.js';
import type { ResourceModule } from './module.js';

export const policy: ResourceModule = {
  id: 'policy',
  segments: ['system', 'policies'],
  shape: 'list',
  schema: policySchema,
  ordered: new Set(['rules']),
  needsUnsealed: false,
  check: (obj, xPath) => policyProblems(obj).map((e) => e.rewrap(`${e.message} (${xPath})`, { 'x-path': xPath })),
};
