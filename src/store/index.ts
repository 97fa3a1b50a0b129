/** Picks the store backend from the settings: Redis when REDIS_URL is set. */
import type { Settings } from '../lib/settings.js';
import { openEmbeddedStore } from './embedded.js';
import { openRedisStore } from './redis.js';
import type { Store } from './store.js';

export type { CommitResult, Entry, Expect, Store, WriteOp } from './store.js';
export { etagOf } from './etag.js';

export async function openStore(settings: Pick<Settings, 'redis' | 'dataDir'>): Promise<Store> {
  if (settings.redis) return openRedisStore(settings.redis);
  return openEmbeddedStore(settings.dataDir);
}
