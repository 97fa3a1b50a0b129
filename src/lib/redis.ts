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
import { createClient, createSentinel, defineScript, TimeoutError, type RedisScripts } from 'redis';
import { ApiError } from './errors.js';
import { log, repeatingLog } from './log.js';
import { withDeadline } from './deadline.js';
import { backoffDelay } from './backoff.js';
import { errorText } from './error-text.js';
import { clusterClient, isCluster, primaryClients, sendCluster, topologyMoved } from './redis-cluster.js';

export type RedisNode = { host: string; port: number };

/** What applies to every kind of deployment (CONTRACT §10). */
type Common = {
  /** REDIS_USERNAME / REDIS_PASSWORD: the ACL user of the data nodes. */
  username?: string;
  password?: string;
  /** REDIS_TLS_CA (the PEM text): TLS to every node, verified against this CA. */
  tlsCa?: string;
  /** REDIS_REPLICA_TIMEOUT: how long an acknowledged write waits for a replica (WAIT). */
  replicaTimeoutMs?: number;
};

/** Where the Redis of a deployment is: one server, a Sentinel-watched primary, or a Cluster. */
export type RedisTarget =
  | ({ kind: 'standalone'; url: string } & Common)
  | ({ kind: 'sentinel'; sentinels: RedisNode[]; master: string } & Common)
  | ({ kind: 'cluster'; nodes: RedisNode[] } & Common);

/** The target of a `redis://` URL (tests and tools name a server by its URL). */
export function toTarget(target: RedisTarget | string): RedisTarget {
  return typeof target === 'string' ? { kind: 'standalone', url: target } : target;
}

/** How a target is named in log lines and messages: never with its password. */
export function describeTarget(target: RedisTarget | string): string {
  const t = toTarget(target);
  const list = (nodes: RedisNode[]) => nodes.map((n) => `${n.host}:${n.port}`).join(',');
  if (t.kind === 'standalone') return t.url.replace(/\/\/[^@/]*@/, '//***@');
  if (t.kind === 'sentinel') return `the primary ${t.master} of the sentinels ${list(t.sentinels)}`;
  return `the Redis Cluster of ${list(t.nodes)}`;
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
  /** Cluster: connect to a node only when a command goes there (a blocking read's own client). */
  lazy?: boolean;
};

/**
 * The pub/sub channel `base` of the database the target selects: pub/sub is server-wide, not
 * per database, so database N > 0 uses `<base>:N` and never hears another database's events.
 */
export function channelOf(target: RedisTarget | string, base: string): string {
  const t = toTarget(target);
  if (t.kind !== 'standalone') return base; // Sentinel and Cluster: database 0 only
  const db = Number(new URL(t.url).pathname.slice(1) || '0');
  return Number.isSafeInteger(db) && db > 0 ? `${base}:${db}` : base;
}

function socketOptions(t: RedisTarget) {
  const base = { reconnectStrategy: reconnectDelayMs, connectTimeout: connectTimeoutMs };
  return t.tlsCa ? { ...base, tls: true as const, ca: t.tlsCa } : base;
}

function standaloneClient<S extends RedisScripts>(
  t: Extract<RedisTarget, { kind: 'standalone' }>,
  role: string,
  opts: ConnectOptions<S>,
) {
  return createClient({
    url: t.url,
    username: t.username,
    password: t.password,
    name: `edgeplane-${role}`,
    disableOfflineQueue: !opts.offlineQueue,
    socket: socketOptions(t),
    scripts: opts.scripts,
    RESP: 2,
  });
}

/**
 * The reconnect policy of a Sentinel client's connections to the primary: as every other's
 * (50 ms doubling, capped at 2 s) but giving up after ~7 s of failed attempts. node-redis
 * 5.12.1's Sentinel client re-reads the sentinels when a command finds its connection down,
 * and when no connection to the primary is ready it opens new ones to the primary they name
 * and holds every command until they connect. Right after a kill -9, before the sentinels mark
 * the primary down, they still name the dead one: with a policy that never gives up, that
 * connect never ended and the client never ran a command again (seen in
 * test/e2e/failover.test.ts (c): the control plane answered no request minutes after the
 * promotion). Giving up fails that connect, and the client asks the sentinels again a second
 * later. Not sooner than ~7 s: node-redis moves a subscription to the new primary by
 * destroying the old connection, which throws when that connection already gave up (the
 * subscription is then lost: seen with 0.75 s), and a promotion takes 2-5 s.
 */
function sentinelReconnectDelayMs(retries: number): number | Error {
  return retries >= 8
    ? new Error('the Redis primary does not answer; asking the sentinels again')
    : reconnectDelayMs(retries);
}

/**
 * A Sentinel deployment (node-redis `createSentinel`): it asks the sentinels for the primary,
 * follows their `+switch-master` and re-asks them every second, so a promoted replica is used
 * within about a second of its promotion. One connection to the primary per client (its pool
 * of one), so a client made for a blocking read or a subscription has its connection alone.
 */
function sentinelClient<S extends RedisScripts>(
  t: Extract<RedisTarget, { kind: 'sentinel' }>,
  role: string,
  opts: ConnectOptions<S>,
) {
  return createSentinel({
    name: t.master,
    sentinelRootNodes: t.sentinels,
    masterPoolSize: 1,
    scanInterval: 1000,
    passthroughClientErrorEvents: true,
    nodeClientOptions: {
      username: t.username,
      password: t.password,
      name: `edgeplane-${role}`,
      disableOfflineQueue: !opts.offlineQueue,
      socket: { ...socketOptions(t), reconnectStrategy: sentinelReconnectDelayMs },
    },
    sentinelClientOptions: { socket: socketOptions(t) },
    scripts: opts.scripts,
    RESP: 2,
  });
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
  const client =
    t.kind === 'standalone'
      ? standaloneClient(t, role, opts)
      : t.kind === 'sentinel'
        ? sentinelClient(t, role, opts)
        : // The three clients share the commands a caller uses (node-redis types them alike).
          (clusterClient(t, role, opts, socketOptions(t)) as unknown as ReturnType<typeof standaloneClient<S>>);
  // Logged as the outage starts, then every 30 s (each reconnect attempt would be a line).
  const errorLog = repeatingLog();
  client.on('error', (err: unknown) => errorLog('warn', 'redis connection error', { role, error: errorText(err) }));
  // Connected again: the next outage is logged as it starts, however soon.
  client.on('ready', () => errorLog.ended());
  return client;
}

/**
 * Calls `fn` each time `client` has a new server connection after its first: a reconnect of
 * one server, or (Sentinel, Cluster) the move to a promoted primary. What a connection held (a
 * CLIENT ID, notifications sent while it was away) is to be learnt again.
 */
export function onNewConnection(
  client: { isReady: boolean; on(event: string, fn: (...a: any[]) => void): unknown },
  fn: () => void,
) {
  if (isCluster(client)) {
    client.on(topologyMoved, fn);
  } else if ('acquire' in client) {
    client.on('topology-change', (e: { type?: string }) => {
      if (e.type === 'MASTER_CHANGE') fn();
    });
  } else {
    let first = !client.isReady; // the first 'ready' of a client not connected yet is its first connection
    client.on('ready', () => {
      if (first) first = false;
      else fn();
    });
  }
}

/**
 * Sends one raw command (`args[0]` the command) on any kind of client. On Cluster it goes to
 * the node of `key` when given (a keyless command that must reach one node: WAIT, CLIENT
 * UNBLOCK), else of the command's first key.
 */
export function send(
  client: { sendCommand(...a: never[]): Promise<unknown> },
  args: string[],
  key?: string,
  options?: SendOptions,
): Promise<unknown> {
  if (isCluster(client)) return sendCluster(client, args, key, options);
  if ('acquire' in client) return (client as unknown as SentinelLike).sendCommand(false, args, options);
  return (client as unknown as PlainLike).sendCommand(args, options);
}

/**
 * node-redis's command options: `timeout` (ms) bounds the wait of a command not yet written
 * (in the offline queue while Redis is unreachable): it is then taken out of the queue, never
 * sent, and rejected with a TimeoutError. Once written it waits for its reply as any other.
 */
export type SendOptions = { timeout?: number };

/** True for a command rejected because its `timeout` passed before it was sent (SendOptions). */
export const leftUnsent = (err: unknown): boolean => err instanceof TimeoutError;

/**
 * Every key matching the glob `match` (SCAN, in pages of 500; of `type` when given), in no
 * particular order. On Cluster every primary is scanned.
 */
export async function scanKeys(client: Parameters<typeof send>[0], match: string, type?: string): Promise<string[]> {
  const nodes: PlainLike[] = isCluster(client) ? await primaryClients(client) : [client as unknown as PlainLike];
  const out: string[] = [];
  for (const node of nodes) {
    let cursor = '0';
    do {
      const args = ['SCAN', cursor, 'MATCH', match, 'COUNT', '500', ...(type ? ['TYPE', type] : [])];
      const reply = (await (node === client ? send(client, args) : node.sendCommand(args))) as [unknown, unknown[]];
      cursor = String(reply[0]);
      for (const k of reply[1]) out.push(String(k));
    } while (cursor !== '0');
  }
  return out;
}

type SentinelLike = { sendCommand(readonly: boolean, args: string[], options?: SendOptions): Promise<unknown> };
type PlainLike = { sendCommand(args: string[], options?: SendOptions): Promise<unknown> };

/**
 * After a Cluster failover: the sharded subscription to `channel` made again (SUNSUBSCRIBE of
 * what the old primary's connection held, then `subscribe`), logged when it fails.
 */
export async function resubscribe(
  sub: { sUnsubscribe(channel: string): Promise<unknown> },
  channel: string,
  subscribe: () => Promise<unknown>,
): Promise<void> {
  try {
    await sub.sUnsubscribe(channel).catch(() => undefined);
    await subscribe();
  } catch (err) {
    log('error', 'redis: subscription after a failover failed', { channel, error: errorText(err) });
  }
}

/**
 * For a subscriber whose connection moved (`onNewConnection`): calls `then` once its
 * subscription is in place again. Cluster (`sharded`): the sharded subscription is made again
 * on the channel's new primary. Sentinel: node-redis moves it to the new primary itself, soon
 * after (a second is given). A reconnect to the same server re-subscribes before it is ready.
 */
export function whenSubscribedAgain(
  sub: { sUnsubscribe(channel: string): Promise<unknown> },
  sharded: boolean,
  channel: string,
  subscribe: () => Promise<unknown>,
  then: () => void,
): void {
  if (sharded) void resubscribe(sub, channel, subscribe).then(then);
  else if ('acquire' in sub) setTimeout(then, 1000).unref();
  else then();
}

/** A client without scripts, as `redisClient` makes it. */
export type RedisClient = ReturnType<typeof redisClient<Record<string, never>>>;

/**
 * One attempt to reach the target's server (PING), without reconnecting: the start-up wait's
 * probe. Resolves when it answers; rejects with its error otherwise. Always closes.
 */
export async function probeRedis(target: RedisTarget | string): Promise<void> {
  const t = toTarget(target);
  if (t.kind !== 'standalone') {
    // The deployment's own client: it answers once the sentinels name a primary that answers.
    const client = redisClient(t, 'probe');
    try {
      await client.connect();
      await send(client, ['PING']);
    } finally {
      await client.destroy();
    }
    return;
  }
  const client = createClient({
    url: t.url,
    username: t.username,
    password: t.password,
    socket: { ...socketOptions(t), reconnectStrategy: false },
  });
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
  await Promise.all(clients.map(closeWithin));
}

/** How long a polite close may take before the client is destroyed. */
const closeBoundMs = 2000;

/**
 * A client that cannot reach Redis would wait for it to come back to close (its queued commands
 * first): it is destroyed after `closeBoundMs`, so a stop while Redis is down ends.
 */
async function closeWithin(c: { isOpen: boolean; close(): Promise<unknown>; destroy(): void }): Promise<void> {
  if (!c.isOpen) return;
  let closed = false;
  const closing = c.close().then(() => (closed = true));
  await withDeadline(closing, closeBoundMs);
  if (closed || !c.isOpen) return;
  try {
    c.destroy();
  } catch {
    // Closed meanwhile: nothing left to end.
  }
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

/**
 * EVALSHA of `script` (from `luaScript`) on any client (Cluster routes by `args[3]`, the first
 * key), sending the source with EVAL when the server answers NOSCRIPT (after a restart or a
 * failover). `args` is the whole command: 'EVALSHA', the script's SHA1, the number of keys, the
 * keys, then the arguments; the caller builds it in one array. For a script on the path of every
 * message: node-redis's script call builds its command with a parser object and one more async
 * step (about 1 KB more allocated a call, sampled at max-in-flight 1).
 */
export function evalScript(
  client: Parameters<typeof send>[0],
  script: { SCRIPT: string; SHA1: string },
  args: string[],
): Promise<unknown> {
  return send(client, args, args[3]).catch((err: unknown) => {
    if (!errorText(err).startsWith('NOSCRIPT')) throw err;
    return send(client, ['EVAL', script.SCRIPT, ...args.slice(2)], args[3]);
  });
}

/**
 * CONTRACT §10: a write answered 2xx survives the loss of the primary when the deployment has
 * replicas. `confirm(key)`, called after a write of `key` on the same client (so on the same connection:
 * WAIT counts the writes of its connection), runs `WAIT 1 <REDIS_REPLICA_TIMEOUT>` when the
 * primary has a replica online (INFO replication, asked at most once a second) and throws
 * 503 `not-replicated` when none confirms in time. Without replicas it returns at once.
 */
export function replicaConfirmation(client: Parameters<typeof send>[0], target: RedisTarget | string) {
  const t = toTarget(target);
  const timeoutMs = t.replicaTimeoutMs ?? 1000;
  // Per node on Cluster: the routing key of the write stands for its node (a few keys: topics, the store's tag).
  const nodes = new Map<string, { checkedAt: number; replicas: boolean }>();
  return async function confirm(key?: string): Promise<void> {
    const k = t.kind === 'cluster' ? (key ?? '') : '';
    let node = nodes.get(k);
    if (!node) {
      if (nodes.size >= 1000) nodes.clear();
      nodes.set(k, (node = { checkedAt: -Infinity, replicas: false }));
    }
    if (Date.now() - node.checkedAt > 1000) {
      const info = String(await send(client, ['INFO', 'replication'], key));
      // A replica still in its first sync (state wait_bgsave or send_bulk: Redis 7 delays a new
      // replica's diskless sync by 5 s) acknowledges nothing yet, and will receive the whole
      // dataset when it is done: only replicas online are waited for.
      node.replicas = /^slave\d+:.*\bstate=online\b/m.test(info);
      node.checkedAt = Date.now();
    }
    if (!node.replicas) return;
    // On Cluster WAIT goes to the node of the written key: the node client that sent the write.
    const acked = Number(await send(client, ['WAIT', '1', String(timeoutMs)], key));
    if (acked >= 1) return;
    node.checkedAt = -Infinity; // ask again next time: the replica may be gone for good
    throw new ApiError(
      'unavailable',
      `The change is on the Redis primary, but no replica confirmed it within REDIS_REPLICA_TIMEOUT (${timeoutMs} ms): it may be lost at a failover`,
      { code: 'not-replicated' },
    );
  };
}
