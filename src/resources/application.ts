/** An application (`applications/<name>`): what deployments place. */
import { applicationSchema } from './schemas.js';
import { resource, type ResourceModule } from './module.js';

export const application: ResourceModule = resource({
  id: 'application',
  segments: ['applications'],
  shape: 'list',
  schema: applicationSchema,
  ordered: new Set(),
  needsUnsealed: false,
});
