/**
 * Each webhook's compiled form (spec.ts) for the revision it was made from, by store key and
 * ETag: the process that commits a webhook compiles it once at write time and keeps it here;
 * the supervisor asks for the revision it starts and compiles only on a miss (a revision
 * another process wrote, or one from before a restart). One entry per webhook, bounded.
 */
import type { JsonObject } from '../../lib/json.js';
import { BoundedMap } from '../../lib/bounded-cache.js';
import { compileSpec, type ExporterSpec } from './spec.js';

const byKey = new BoundedMap<string, { etag: string; spec: ExporterSpec }>(10_000);

/** Keeps the compiled form of the webhook stored under `key` with `etag`. */
export function keepSpec(key: string, etag: string, spec: ExporterSpec): void {
  byKey.set(key, { etag, spec });
}

/** The compiled form of revision `etag` of the webhook under `key`; compiles `cfg` on a miss (throws as compileSpec). */
export function specOf(key: string, etag: string, tenant: string, cfg: JsonObject, rootTenant: string): ExporterSpec {
  const hit = byKey.get(key);
  if (hit && hit.etag === etag && hit.spec.tenant === tenant) return hit.spec;
  const spec = compileSpec(tenant, cfg, rootTenant);
  byKey.set(key, { etag, spec });
  return spec;
}
