/** A subtenant (`system/tenants/<name>`): a new one needs a free name. */
import { tenantSchema } from './schemas.js';
import { resource, type ResourceModule } from './module.js';
import { collectProblems } from './problems.js';

export const tenant: ResourceModule = resource({
  id: 'tenant',
  segments: ['system', 'tenants'],
  shape: 'list',
  schema: tenantSchema,
  ordered: new Set(),
  needsUnsealed: false,
  async checkInTenant(before, _after, name, ctx) {
    if (before || !name) return [];
    return await collectProblems(() => ctx.checkNewTenant(name));
  },
});
