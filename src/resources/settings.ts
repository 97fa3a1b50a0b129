/**
 * The system settings singleton (`system/settings`): it exists in effect even when never
 * written, and its state always has a `default-domain` (`<site>.local` unless configured).
 */
import { settingsSchema } from './schemas.js';
import { resource, type ResourceModule } from './module.js';

export const settings: ResourceModule = resource({
  id: 'settings',
  segments: ['system', 'settings'],
  shape: 'object',
  schema: settingsSchema,
  ordered: new Set(),
  needsUnsealed: false,
  async stateItems(items, _addressed, ctx) {
    const domain = `${ctx.site}.local`;
    const first = items[0];
    if (!first) return [{ path: 'system/settings', value: { 'default-domain': domain }, config: new Set() }];
    if (first.value['default-domain'] !== undefined) return items;
    return [{ ...first, value: { ...first.value, 'default-domain': domain } }, ...items.slice(1)];
  },
});
