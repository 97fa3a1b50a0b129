/**
 * A DNS zone (`system/dns-zones/<name>`). The zone `default` exists in effect even when not
 * configured: its domain is the settings' `default-domain`, else `<site>.local` (CONTRACT §2).
 * So it is not written as a zone: a write of it is a 400 that names the setting to change
 * (written, state and SYS_DNS_ZONES[default] would disagree).
 */
import { ApiError } from '../lib/errors.js';
import { dnsZoneSchema } from './schemas.js';
import { resource, type ResourceModule } from './module.js';

export const dnsZone: ResourceModule = resource({
  id: 'dns-zone',
  segments: ['system', 'dns-zones'],
  shape: 'list',
  schema: dnsZoneSchema,
  ordered: new Set(),
  needsUnsealed: false,
  check(obj, xPath) {
    if (obj.name !== 'default') return [];
    return [
      new ApiError(
        'invalid-value',
        `Cannot write the DNS zone default (${xPath}): it is the tenant's default domain; set default-domain in /v1/config/system/settings instead`,
        { code: 'reserved-name', path: 'name', setting: '/v1/config/system/settings/default-domain' },
      ),
    ];
  },
  async stateItems(items, addressed, ctx) {
    if (items.some((i) => i.value.name === 'default')) return items;
    if (addressed.kind !== 'list' && addressed.name !== 'default') return items;
    const settings = await ctx.getConfig('system/settings');
    const domain = settings?.['default-domain'] ?? `${ctx.site}.local`;
    return [{ path: 'system/dns-zones/default', value: { name: 'default', domain }, config: new Set() }, ...items];
  },
});
