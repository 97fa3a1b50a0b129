/**
 * An application deployment (`application-deployments/<name>`): places its application on
 * the sites its label expression selects; its state lists them (`status.selected-sites`).
 */
import { isObject } from '../lib/json.js';
import type { ApiError } from '../lib/errors.js';
import { compileLabelExpr } from '../query/labels.js';
import { deploymentSchema } from './schemas.js';
import { resource, type ResourceModule } from './module.js';
import { attempt } from './problems.js';
import { selectedSites } from './placement.js';
import { site } from './site.js';

export const deployment: ResourceModule = resource({
  id: 'deployment',
  segments: ['application-deployments'],
  shape: 'list',
  schema: deploymentSchema,
  ordered: new Set(),
  needsUnsealed: false,
  check(obj, xPath) {
    const out: ApiError[] = [];
    const placement = obj.placement;
    if (isObject(placement) && typeof placement['match-site-labels'] === 'string') {
      const expr = placement['match-site-labels'];
      attempt(out, xPath, 'placement/match-site-labels', () => compileLabelExpr(expr));
    }
    return out;
  },
  dependsOnIds: ['application'],
  dependsOn(obj) {
    const app = obj['application-name'];
    return typeof app === 'string' ? [`application:${app}`] : [];
  },
  async derivedState(value, ctx) {
    const sites = await ctx.listConfig(site.pathOf());
    return { status: { 'selected-sites': selectedSites(value, sites) } };
  },
  stateMembers: {
    status: { type: 'object', properties: { 'selected-sites': { type: 'array', items: { type: 'string' } } } },
  },
});
