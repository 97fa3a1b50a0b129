/**
 * Redis Cluster (node-redis `createCluster`), the part of `lib/redis.ts` that only a Cluster
 * needs: the client, its topology follower, and how a raw command finds its node.
 *
 * node-redis 5 learns the slot map at connect and again only when a node answers MOVED or ASK
 * (node-redis issue #2806): a primary killed outright never answers MOVED, so its slots would
 * stay unreachable. `followTopology` asks the cluster again whenever a node's connection fails
 * (at most every 250 ms while failures go on) and every 5 s, and emits `topology-moved` when
 * the primaries changed, so what a connection held (a subscription, a CLIENT ID) is set up
 * again on the new primary.
 */
import { createCluster, type RedisScripts } from 'redis';
import { log } from './log.js';
import { errorText } from './error-text.js';

/** The event a Cluster client emits when its set of primaries changed (a failover). */
export const topologyMoved = 'topology-moved';

type ClusterTarget = {
  nodes: { host: string; port: number }[];
  username?: string;
  password?: string;
};

export type ClusterOptions<S extends RedisScripts> = {
  scripts?: S;
  offlineQueue?: boolean;
  /** true: connect to a node only when a command goes there (a blocking read's own client). */
  lazy?: boolean;
};

const refreshEveryMs = 5000;

export function clusterClient<S extends RedisScripts>(
  t: ClusterTarget,
  role: string,
  opts: ClusterOptions<S>,
  socket: Record<string, unknown>,
) {
  const cluster = createCluster({
    rootNodes: t.nodes.map((n) => ({ socket: { host: n.host, port: n.port } })),
    defaults: {
      username: t.username,
      password: t.password,
      name: `edgeplane-${role}`,
      disableOfflineQueue: !opts.offlineQueue,
      socket,
    },
    minimizeConnections: opts.lazy ?? false,
    scripts: opts.scripts,
    RESP: 2,
  });
  followTopology(cluster, role);
  return cluster;
}

type Slots = { rediscover(start: { options: unknown }): Promise<void> };
type ClusterLike = {
  masters: Array<{ host: string; port: number }>;
  isOpen: boolean;
  on(event: string, fn: (...a: any[]) => void): unknown;
  emit(event: string, ...a: unknown[]): boolean;
};

function followTopology(cluster: ClusterLike, role: string): void {
  const primaries = () =>
    cluster.masters
      .map((m) => `${m.host}:${m.port}`)
      .sort()
      .join(',');
  let known = '';
  let running: Promise<void> | undefined;
  let again = false;
  let lastAt = 0;
  const refresh = (): void => {
    if (!cluster.isOpen) return;
    if (running) {
      again = true;
      return;
    }
    const wait = Math.max(0, lastAt + 250 - Date.now());
    running = new Promise<void>((r) => setTimeout(r, wait).unref())
      .then(async () => {
        lastAt = Date.now();
        if (!cluster.isOpen) return;
        const slots = (cluster as unknown as { _slots: Slots })._slots;
        const start = cluster.masters[Math.floor(Math.random() * cluster.masters.length)];
        await slots.rediscover({ options: start ? { socket: { host: start.host, port: start.port } } : {} });
        const now = primaries();
        if (known !== '' && now !== known) {
          log('info', 'redis cluster: the primaries changed', { role, primaries: now });
          cluster.emit(topologyMoved);
        }
        known = now;
      })
      .catch((err: unknown) => log('debug', 'redis cluster: topology refresh failed', { role, error: errorText(err) }))
      .finally(() => {
        running = undefined;
        if (again) {
          again = false;
          refresh();
        }
      });
  };
  cluster.on('connect', () => {
    known = primaries();
  });
  cluster.on('node-error', refresh);
  cluster.on('node-reconnecting', refresh);
  const timer = setInterval(refresh, refreshEveryMs);
  timer.unref();
  cluster.on('disconnect', () => clearInterval(timer));
}

/** True for a node-redis Cluster client. */
export function isCluster(client: object): boolean {
  return 'nodeClient' in client && 'masters' in client;
}

/** Commands without a key: on Cluster they go to any node unless a routing key is given. */
const keyless = new Set(['PING', 'INFO', 'WAIT', 'CLIENT', 'SCAN', 'FLUSHALL', 'FLUSHDB', 'DBSIZE', 'TIME', 'ROLE']);

/** The key that routes a raw command on Cluster (its first key), undefined when it has none. */
export function routeKey(args: readonly string[]): string | undefined {
  const cmd = args[0]!.toUpperCase();
  if (cmd === 'XREAD' || cmd === 'XREADGROUP') {
    const i = args.findIndex((a) => a.toUpperCase() === 'STREAMS');
    return i < 0 ? undefined : args[i + 1];
  }
  if (cmd === 'XINFO' || cmd === 'XGROUP') return args[2];
  return keyless.has(cmd) ? undefined : args[1];
}

const readonlyCommands = new Set([
  'GET',
  'MGET',
  'HGET',
  'HMGET',
  'HGETALL',
  'XRANGE',
  'XREVRANGE',
  'XLEN',
  'XINFO',
  'TYPE',
]);

/** Sends a raw command on a Cluster client, to the node of `key` (or of the command's first key). */
export function sendCluster(
  client: unknown,
  args: string[],
  key?: string,
  options?: { timeout?: number },
): Promise<unknown> {
  const c = client as {
    sendCommand(
      firstKey: string | undefined,
      readonly: boolean,
      args: string[],
      options?: { timeout?: number },
    ): Promise<unknown>;
  };
  return c.sendCommand(key ?? routeKey(args), readonlyCommands.has(args[0]!.toUpperCase()), args, options);
}

/** Every primary's own client (SCAN goes to each). */
export async function primaryClients(
  client: unknown,
): Promise<Array<{ sendCommand(args: string[]): Promise<unknown> }>> {
  const c = client as { masters: unknown[]; nodeClient(n: unknown): unknown };
  return Promise.all(
    c.masters.map(async (m) => (await c.nodeClient(m)) as { sendCommand(a: string[]): Promise<unknown> }),
  );
}

/** CRC16-CCITT (XMODEM), the hash of Redis Cluster's key slots, a byte at a time from a table. */
const crcTable = Array.from({ length: 256 }, (_, b) => {
  let crc = b << 8;
  for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  return crc;
});
function crc16(bytes: Uint8Array): number {
  let crc = 0;
  for (const b of bytes) crc = ((crc << 8) & 0xffff) ^ crcTable[((crc >> 8) ^ b) & 0xff]!;
  return crc;
}

const utf8 = new TextEncoder();

/** The Cluster slot of `key` (its hash tag `{…}` when it has a non-empty one), as CLUSTER KEYSLOT answers. */
export function keySlot(key: string): number {
  const open = key.indexOf('{');
  if (open >= 0) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) key = key.slice(open + 1, close);
  }
  return crc16(utf8.encode(key)) % 16384;
}

/** The number of slots of a Redis Cluster. */
export const slotCount = 16384;

let tags: string[] | undefined;

/**
 * A short hash tag for each slot: `slotTags()[s]` is the shortest base-36 number whose slot is
 * `s`, so a name `…{tag}…` lands on slot `s` (a channel a script publishes to from its keys'
 * slot). Found once, by trying numbers in turn (~170,000 of them, ~50 ms).
 */
export function slotTags(): readonly string[] {
  if (tags) return tags;
  const found = new Array<string | undefined>(slotCount);
  let left = slotCount;
  for (let i = 0; left > 0; i++) {
    const tag = i.toString(36);
    const slot = keySlot(tag);
    if (found[slot] === undefined) {
      found[slot] = tag;
      left--;
    }
  }
  return (tags = found as string[]);
}
