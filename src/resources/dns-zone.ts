/**
 * A DNS zone (`system/dns-zones/<name>`). The zone `default` exists in effect even when not
 * configured: its domain is the settings' `default-domain`, else `<site>.local`.
 */
import { dnsZoneSchema } from './schemas.js';
import { resource, type ResourceModule } from './module.js';

export const dnsZone: ResourceModule = resource({
  id: 'dns-zone',
  segments: ['system', 'dns-zones'],
  shape: 'list',
  schema: dnsZoneSchema,
  ordered: new Set(),
  needsUnsealed: false,
  async stateItems(items, addressed, ctx) {
    if (items.some((i) => i.value.name === 'default')) return items;
    if (addressed.kind !== 'list' && addressed.name !== 'default') return items;
    const settings = await ctx.getConfig('system/settings');
    const domain = settings?.['default-domain'] ?? `${ctx.site}.local`;
    return [{ path: 'system/dns-zones/default', value: { name: 'default', domain }, config: new Set() }, ...items];
  },
});
