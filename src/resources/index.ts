/**
 * The resource registry: every configuration list and singleton the API serves, one module
 * each (module.ts says what a module holds). The order is the order of resolution and of
 * the OpenAPI document. model/resources.ts resolves URL paths against it; the model, the API
 * and the exporter call the modules' hooks instead of switching on ids.
 */
import type { ResourceModule } from './module.js';
import { webhook } from './webhook/index.js';
import { application } from './application.js';
import { deployment } from './deployment.js';
import { site } from './site.js';
import { settings } from './settings.js';
import { dnsZone } from './dns-zone.js';
import { user } from './user.js';
import { policy } from './policy/index.js';
import { tenant } from './tenant.js';
import { vault } from './vault.js';
import { secret } from './secret.js';

export type { ResourceModule } from './module.js';

export const resources: readonly ResourceModule[] = [
  webhook,
  application,
  deployment,
  site,
  settings,
  dnsZone,
  user,
  policy,
  tenant,
  vault,
  secret,
];

const byId: ReadonlyMap<string, ResourceModule> = new Map(resources.map((r) => [r.id, r]));

/** The nested resources whose objects live under one object of `def` (the secrets of a vault). */
export function childrenOf(def: ResourceModule): ResourceModule[] {
  return resources.filter((r) => r.parent === def.id);
}

/** The resource that holds the enclosing key of a nested resource. */
export function parentOf(def: ResourceModule): ResourceModule | undefined {
  return def.parent === undefined ? undefined : byId.get(def.parent);
}
