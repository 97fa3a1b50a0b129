/** A vault of the secret store (`strongbox/vaults/<name>`): the parent of its secrets. */
import { vaultSchema } from './schemas.js';
import { resource, type ResourceModule } from './module.js';

export const vault: ResourceModule = resource({
  id: 'vault',
  segments: ['strongbox', 'vaults'],
  shape: 'list',
  schema: vaultSchema,
  ordered: new Set(),
  needsUnsealed: true,
});
