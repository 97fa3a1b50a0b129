/**
 * `openBus(settings)`: Redis streams when REDIS_URL is set (the production path), else the
 * embedded bus persisted under DATA_DIR. The bus keeps its own data, apart from the store
 * (streams are not configuration).
 */
import type { Settings } from '../lib/settings.js';
import type { Bus } from './bus.js';
import { openEmbeddedBus } from './embedded-bus.js';
import { openRedisBus } from './redis-bus.js';

export type { Bus, StreamEntry, TopicInfo, ProduceInput, StartAt, GroupRead } from './bus.js';
export { BusError, streamPrefix } from './bus.js';
export { openRedisBus } from './redis-bus.js';
export { openEmbeddedBus } from './embedded-bus.js';

export async function openBus(settings: Pick<Settings, 'redis' | 'dataDir'>): Promise<Bus> {
  if (settings.redis) return openRedisBus(settings.redis);
  return openEmbeddedBus(settings.dataDir);
}
