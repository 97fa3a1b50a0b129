/** Picks the store backend from the settings: Redis when REDIS_URL is set. */
import type { Settings } from '../lib/settings.js';
import { openEmbeddedStore } from './embedded.js';
import { openRedisStore } from './redis.js';
import type { Store } from './store.js';

export type { CommitResult, Entry, Expect, Store, WriteOp } from './store.js';
export { etagOf } from './etag.js';

export async function openStore(
  settings: Pick<Settings, 'redis' | 'dataDir'> & { configHistoryMs?: number },
): Promise<Store> {
  const historyMs = settings.configHistoryMs;
  const opts = historyMs !== undefined ? { historyMs } : {};
  if (settings.redis) return openRedisStore(settings.redis, opts);
  return openEmbeddedStore(settings.dataDir, opts);
}
