/**
 * `openBus(settings)`: Redis streams when REDIS_URL is set (the production path), else the
 * embedded bus persisted under DATA_DIR. The store parameter is accepted so callers can pass
 * what they have; the bus keeps its own data (streams are not configuration).
 */
import type { Settings } from '../settings.js';
import type { Store } from '../store/store.js';
import type { Bus } from './bus.js';
import { openEmbeddedBus } from './embedded-bus.js';
import { openRedisBus } from './redis-bus.js';

export type { Bus, StreamEntry, TopicInfo, ProduceInput, StartAt, GroupRead } from './bus.js';
export { BusError, streamPrefix } from './bus.js';
export { openRedisBus } from './redis-bus.js';
export { openEmbeddedBus } from './embedded-bus.js';

export async function openBus(settings: Pick<Settings, 'redisUrl' | 'dataDir'>, _store?: Store): Promise<Bus> {
  if (settings.redisUrl) return openRedisBus(settings.redisUrl);
  return openEmbeddedBus(settings.dataDir);
}
