/**
 * A site (`sites/<name>`): its labels place deployments and webhooks. At a control plane its
 * state adds the site's link (connection, last-seen, config-version, in-sync).
 */
import { siteSchema } from './schemas.js';
import { resource, type ResourceModule } from './module.js';

export const site: ResourceModule = resource({
  id: 'site',
  segments: ['sites'],
  shape: 'list',
  schema: siteSchema,
  ordered: new Set(['management-ipv4-access-list']),
  listKeys: { hosts: 'host-id' },
  needsUnsealed: false,
  async derivedState(value, ctx) {
    if (typeof value.name !== 'string') return {};
    const link = await ctx.siteLink(value.name);
    return link ? { ...value, ...link } : {};
  },
  // The link's members (fleet/presence.ts): what `fields` may name and the OpenAPI document shows.
  stateMembers: {
    connection: { enum: ['connected', 'disconnected', 'never-connected'] },
    'last-seen': { type: 'string' },
    'config-version': { type: 'string' },
    'in-sync': { type: 'boolean' },
  },
});
