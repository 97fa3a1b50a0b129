/**
 * The bus's wake-ups on Redis Cluster. One `XREAD BLOCK` can only name streams of one hash
 * slot (CROSSSLOT otherwise), so each slot that has watched streams gets its own Notifier on
 * its own connection: a lazy Cluster client that connects only to the node serving that slot
 * and follows it through a failover. The block stays finite (1 s, `notifier.ts`). Topics hash
 * to slots by their stream name `volga:T`, so a deployment with N topics in use holds at most
 * N such connections (fewer when topics share a slot), whatever the number of exporters.
 */
import { redisClient, type RedisClient, type RedisTarget, type send } from '../lib/redis.js';
import { keySlot } from '../lib/redis-cluster.js';
import { log } from '../lib/log.js';
import { errorText } from '../lib/error-text.js';
import { Notifier } from './notifier.js';

type Slot = { conn: RedisClient; notifier: Promise<Notifier | undefined> };

export class SlotNotifiers {
  private readonly slots = new Map<number, Slot>();
  private closed = false;

  constructor(
    private readonly target: RedisTarget,
    private readonly command: Parameters<typeof send>[0],
  ) {}

  watch(key: string, wake: () => void): () => void {
    const slot = keySlot(key);
    let s = this.slots.get(slot);
    if (!s) {
      const conn = redisClient(this.target, `bus-notifier-${slot}`, { offlineQueue: true, lazy: true });
      const notifier = conn.connect().then(
        () => new Notifier(conn, this.command, key),
        (err: unknown) => {
          log('warn', 'bus: notifier connection failed', { slot, error: errorText(err) });
          return undefined;
        },
      );
      this.slots.set(slot, (s = { conn, notifier }));
    }
    let unwatch: (() => void) | undefined;
    let gone = false;
    void s.notifier.then((n) => {
      if (!gone && n && !this.closed) unwatch = n.watch(key, wake);
    });
    return () => {
      gone = true;
      unwatch?.();
    };
  }

  async close(): Promise<void> {
    this.closed = true;
    const all = [...this.slots.values()];
    const stopping = Promise.all(all.map(async (s) => (await s.notifier)?.close()));
    // Destroying the connections ends the blocked reads at once.
    for (const s of all) void Promise.resolve(s.conn.destroy()).catch(() => undefined);
    await stopping;
  }

  /** The connection names, for CLIENT LIST checks. */
  names(): string[] {
    return [...this.slots.keys()].map((slot) => `edgeplane-bus-notifier-${slot}`);
  }
}
