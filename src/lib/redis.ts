/**
 * The one place where edgeplane makes a Redis connection (STYLE "Redis beyond one node").
 * Every Redis user (the store, the bus, the fleet log, the relay, the start-up probe) gets its
 * clients here, so the connection options, the reconnect policy, the connection names and the
 * error logging are written once, and a new kind of deployment is added here only.
 *
 * Lua scripts are declared with `luaScript` (node-redis `defineScript`): the client sends them
 * by SHA (EVALSHA) and re-sends the source when the server answers NOSCRIPT (after a restart or
 * SCRIPT FLUSH); their keys are marked as keys, so a Cluster client routes them by slot.
 */
import { createClient, defineScript, type RedisScripts } from 'redis';
import { log } from './log.js';
import { backoffDelay } from './backoff.js';
import { errorText } from './error-text.js';

/** Where the Redis of a deployment is: a `redis://` or `rediss://` URL (one server). */
export type RedisTarget = { kind: 'standalone'; url: string };

/** The target of a `redis://` URL (tests and tools name a server by its URL). */
export function toTarget(target: RedisTarget | string): RedisTarget {
  return typeof target === 'string' ? { kind: 'standalone', url: target } : target;
}

/**
 * Reconnect back-off of every connection: 50 ms doubling, capped at 2 s, never giving up, so
 * a Redis restart or a failover is picked up within seconds of the server answering again.
 */
export function reconnectDelayMs(retries: number): number {
  return backoffDelay(retries, { baseMs: 50, maxMs: 2000 });
}

export const connectTimeoutMs = 5000;

export type ConnectOptions<S extends RedisScripts> = {
  /** The Lua scripts this connection runs (its methods of the same names). */
  scripts?: S;
  /**
   * true: commands issued while disconnected wait for the reconnect (the bus: an exporter's
   * read simply waits). false (default): they fail at once, so an API request answers 503
   * instead of waiting without bound.
   */
  offlineQueue?: boolean;
};

/**
 * The pub/sub channel `base` of the database the target selects: pub/sub is server-wide, not
 * per database, so database N > 0 uses `<base>:N` and never hears another database's events.
 */
export function channelOf(target: RedisTarget | string, base: string): string {
  const t = toTarget(target);
  const db = Number(new URL(t.url).pathname.slice(1) || '0');
  return Number.isSafeInteger(db) && db > 0 ? `${base}:${db}` : base;
}

/**
 * A client named `edgeplane-<role>` (CLIENT LIST shows who is who), with the reconnect policy
 * above and an 'error' listener that logs (node-redis reconnects on its own). Not connected
 * yet: the caller awaits `connect()` where it wants to report a failure its own way.
 */
export function redisClient<S extends RedisScripts = Record<string, never>>(
  target: RedisTarget | string,
  role: string,
  opts: ConnectOptions<S> = {},
) {
  const t = toTarget(target);
  const client = createClient({
    url: t.url,
    name: `edgeplane-${role}`,
    disableOfflineQueue: !opts.offlineQueue,
    socket: { reconnectStrategy: reconnectDelayMs, connectTimeout: connectTimeoutMs },
    scripts: opts.scripts,
    RESP: 2,
  });
  client.on('error', (err: unknown) => log('warn', 'redis connection error', { role, error: errorText(err) }));
  return client;
}

/** A client without scripts, as `redisClient` makes it. */
export type RedisClient = ReturnType<typeof redisClient<Record<string, never>>>;

/**
 * One attempt to reach the target's server (PING), without reconnecting: the start-up wait's
 * probe. Resolves when it answers; rejects with its error otherwise. Always closes.
 */
export async function probeRedis(target: RedisTarget | string): Promise<void> {
  const t = toTarget(target);
  const client = createClient({ url: t.url, socket: { reconnectStrategy: false, connectTimeout: connectTimeoutMs } });
  client.on('error', () => undefined); // the rejection below carries it
  try {
    await client.connect();
    await client.ping();
  } finally {
    if (client.isOpen) client.destroy();
  }
}

/** Closes clients politely, destroying any that does not close. */
export async function closeClients(...clients: Array<{ isOpen: boolean; close(): Promise<unknown>; destroy(): void }>) {
  await Promise.all(clients.map((c) => (c.isOpen ? c.close().catch(() => c.destroy()) : undefined)));
}

/**
 * A Lua script with a variable number of keys: called as `client.<name>(keys, args)`, it runs
 * EVALSHA with the keys marked as keys (Cluster routes by them: they must share a hash tag).
 * The reply is the script's raw reply.
 */
export function luaScript(source: string) {
  return defineScript({
    SCRIPT: source,
    parseCommand(parser, keys: string[], args: string[]) {
      parser.pushKeysLength(keys);
      for (const a of args) parser.push(a);
    },
    transformReply: (reply: unknown): unknown => reply,
  });
}
