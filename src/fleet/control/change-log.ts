/**
 * The fleet change log: per site, an ordered history of changes to the set of objects that
 * applies to it, and that set materialised, so a snapshot is one read. A version is a Redis
 * stream ID (`<ms>-<seq>`), ordered like Kubernetes' resourceVersion; `0-0` is the empty
 * start. `floor` (the log's first version, later the newest trimmed one) bounds the history: a
 * site at a version below it, or above the head, or from another log, must take a snapshot
 * (Kubernetes' 410-and-relist).
 *
 * `append` is a compare-and-set on the head: it writes only when the site's log still ends at
 * `expectedHead` and was not projected from a newer configuration revision, so concurrent
 * projectors (several control-plane processes) can neither interleave entries nor go back in
 * time. The set, the entry and the head change together, atomically.
 *
 * Redis layout (redis-cli readable):
 *   ep:fleet:<site>:set   hash store key → object JSON (what the site should hold now)
 *   ep:fleet:<site>:log   stream, one entry per change of the set, field `c` = JSON changes
 *   ep:fleet:<site>:meta  hash {head, floor, rev} (rev = configuration revision projected)
 *   ep:fleet:sites        set of the sites that have a log
 *   ep:fleet:appended     pub/sub after each append (ep:fleet:appended:N on DB N): JSON
 *                         {"s": site, "p": previous head, "v": version, "c": changes}, without
 *                         "c" when the changes are over 64 KiB (readers then read the log)
 * On Redis Cluster a site's three keys share the site's hash tag (`ep:fleet:{<site>}:set`,
 * `:log`, `:meta`: the append script touches them together), `ep:fleet:sites` is added to
 * after the script (its own slot), and the script publishes the note on its slot's sharded
 * channel `ep:fleet:{<tag>}:appended` (SPUBLISH; `<tag>` a short name that hashes to that
 * slot), so the note is written once, by the script, as on one Redis. Every process subscribes
 * to the 16,384 slots' channels.
 * The embedded store's control plane keeps the same structures in memory: they are derived
 * from the configuration, so a restart rebuilds them, and the new log's floor sends every
 * site that synced before the restart a snapshot.
 */
import { ApiError } from '../../lib/errors.js';
import type { JsonObject } from '../../lib/json.js';
import { log } from '../../lib/log.js';
import {
  channelOf,
  closeClients,
  luaScript,
  onNewConnection,
  redisClient,
  resubscribe,
  whenSubscribedAgain,
  toTarget,
  type RedisTarget,
} from '../../lib/redis.js';
import { compareVersions, parseVersion, type FleetChange, type FleetEntry } from '../common/protocol.js';
import { errorText } from '../../lib/error-text.js';
import { backoffDelay } from '../../lib/backoff.js';
import { isDeepFrozen } from '../../store/freeze.js';
import { keySlot, slotTags } from '../../lib/redis-cluster.js';

/**
 * An entry as its append notification carries it: `prev` is the head it was appended to; its
 * changes as objects (in process) or as the JSON text the log holds (`text`, from Redis: a
 * stream sends that text as it is, without parsing it and writing it again for each site).
 */
export type Appended = { version: string; prev: string } & ({ changes: FleetChange[] } | { text: string });
export type FleetSnapshot = { version: string; rev: number; objects: Map<string, JsonObject> };

export interface FleetLog {
  snapshot(site: string): Promise<FleetSnapshot>;
  /** Appends one entry (CAS on the head, see above): the new version, or undefined when it lost a race. */
  append(site: string, expectedHead: string, rev: number, changes: FleetChange[]): Promise<string | undefined>;
  /** Entries after `after`, oldest first, at most `limit`; 'reset' when `after` is outside the history. */
  since(site: string, after: string, limit: number): Promise<FleetEntry[] | 'reset'>;
  /** Drops entries older than `beforeMs` (their newest becomes the floor). */
  trim(site: string, beforeMs: number): Promise<void>;
  sites(): Promise<string[]>;
  /** The head version of each of `sites` ('0-0' for a site without a log), in one round trip. */
  heads(sites: string[]): Promise<Map<string, string>>;
  /** The number of entries the site's log retains (metrics: the change lag of a site beyond it). */
  length(site: string): Promise<number>;
  /**
   * Called after an append by any process with the site's name and, when small enough to
   * travel with the notification, the entry and the head it follows (a stream at `prev` sends
   * it without reading the log).
   */
  onAppend(listener: (site: string, appended?: Appended) => void): () => void;
  /**
   * Called when append notifications may have been lost: the subscription was made again (a
   * reconnect, a failover) or is first in place. Whoever waits for an append reads the log instead.
   */
  onResync(listener: () => void): () => void;
  close(): Promise<void>;
}

/** True when a site at `after` can catch up by entries alone: floor ≤ after ≤ head. */
export function withinHistory(after: string, floor: string, head: string): boolean {
  return parseVersion(after) !== undefined && compareVersions(after, floor) >= 0 && compareVersions(after, head) <= 0;
}

// ---------------------------------------------------------------------------------------------
// In process (the embedded store's control plane)

export function createEmbeddedFleetLog(now: () => number = Date.now): FleetLog {
  type SiteLog = { set: Map<string, JsonObject>; entries: FleetEntry[]; head: string; floor: string; rev: number };
  const logs = new Map<string, SiteLog>();
  const listeners = new Set<(site: string, appended?: Appended) => void>();
  let last: [number, number] = [0, 0];

  const siteLog = (site: string): SiteLog => {
    let l = logs.get(site);
    if (!l) logs.set(site, (l = { set: new Map(), entries: [], head: '0-0', floor: '0-0', rev: -1 }));
    return l;
  };
  const nextId = (): string => {
    const ms = now();
    last = ms > last[0] ? [ms, 0] : [last[0], last[1] + 1];
    return `${last[0]}-${last[1]}`;
  };

  return {
    async snapshot(site) {
      const l = siteLog(site);
      return { version: l.head, rev: l.rev, objects: new Map(l.set) };
    },
    async append(site, expectedHead, rev, changes) {
      const l = siteLog(site);
      if (l.head !== expectedHead || l.rev > rev) return undefined;
      const version = nextId();
      for (const c of changes) {
        if (c.op === 'put') l.set.set(c.key, c.value);
        else l.set.delete(c.key);
      }
      // The first entry is the floor: a version from any other history (a restart, a wiped log) is outside it.
      if (l.head === '0-0') l.floor = version;
      l.entries.push({ version, changes });
      l.head = version;
      l.rev = rev;
      const appended: Appended = { version, changes, prev: expectedHead };
      for (const fn of listeners) queueMicrotask(() => fn(site, appended));
      return version;
    },
    async since(site, after, limit) {
      const l = siteLog(site);
      if (!withinHistory(after, l.floor, l.head)) return 'reset';
      const out: FleetEntry[] = [];
      for (const e of l.entries) {
        if (compareVersions(e.version, after) <= 0) continue;
        out.push(e);
        if (out.length >= limit) break;
      }
      return out;
    },
    async trim(site, beforeMs) {
      const l = siteLog(site);
      let i = 0;
      while (i < l.entries.length && (parseVersion(l.entries[i]!.version)?.[0] ?? 0n) < BigInt(beforeMs)) i++;
      if (i === 0) return;
      l.floor = l.entries[i - 1]!.version;
      l.entries.splice(0, i);
    },
    async sites() {
      return [...logs.keys()].filter((s) => logs.get(s)!.head !== '0-0');
    },
    async heads(sites) {
      return new Map(sites.map((s) => [s, logs.get(s)?.head ?? '0-0']));
    },
    async length(site) {
      return logs.get(site)?.entries.length ?? 0;
    },
    onAppend(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    onResync: () => () => undefined, // in process: nothing is ever lost
    async close() {
      listeners.clear();
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Redis

/** A site's keys; on Cluster under the site's hash tag (one slot for the append script). */
const siteKeys = (site: string, cluster: boolean) => {
  const s = cluster ? `{${site}}` : site;
  return { set: `ep:fleet:${s}:set`, log: `ep:fleet:${s}:log`, meta: `ep:fleet:${s}:meta` };
};
const sitesKey = 'ep:fleet:sites';
/**
 * On Cluster, the append notifications of the sites whose keys hash to a slot: a script may
 * publish only within its keys' slot, so each slot has its channel, named with that slot's tag.
 */
const clusterChannel = (tag: string) => `ep:fleet:{${tag}}:appended`;

/**
 * KEYS: set, log, meta, sites (not on Cluster). ARGV: site, expected head, rev, channel, the
 * command that publishes to it (PUBLISH, or SPUBLISH on Cluster: the channel is then in the
 * keys' slot), n, then n × (op, key, value JSON or ''). The entry's changes JSON is written here
 * from the values (each value's text crosses the wire once, not twice); a key is written as
 * JSON.stringify writes it (cjson's `\/` undone).
 * Returns {1, id}, or {0, 'conflict'|'stale'}.
 */
const appendScript = luaScript(`
local head = redis.call('HGET', KEYS[3], 'head') or '0-0'
if head ~= ARGV[2] then return {0, 'conflict'} end
local prev = tonumber(redis.call('HGET', KEYS[3], 'rev') or '-1')
if prev > tonumber(ARGV[3]) then return {0, 'stale'} end
local n = tonumber(ARGV[6])
local parts = {}
for i = 0, n - 1 do
  local b = 7 + i * 3
  local key = string.gsub(cjson.encode(ARGV[b + 1]), '\\\\/', '/')
  if ARGV[b] == 'put' then
    redis.call('HSET', KEYS[1], ARGV[b + 1], ARGV[b + 2])
    parts[i + 1] = '{"op":"put","key":' .. key .. ',"value":' .. ARGV[b + 2] .. '}'
  else
    redis.call('HDEL', KEYS[1], ARGV[b + 1])
    parts[i + 1] = '{"op":"delete","key":' .. key .. '}'
  end
end
local changes = '[' .. table.concat(parts, ',') .. ']'
local id = redis.call('XADD', KEYS[2], '*', 'c', changes)
redis.call('HSET', KEYS[3], 'head', id, 'rev', ARGV[3])
if head == '0-0' then redis.call('HSET', KEYS[3], 'floor', id) end
if KEYS[4] then redis.call('SADD', KEYS[4], ARGV[1]) end
local note = '{"s":' .. cjson.encode(ARGV[1]) .. ',"p":"' .. head .. '","v":"' .. id .. '"'
if #changes <= 65536 then note = note .. ',"c":' .. changes end
note = note .. '}'
redis.call(ARGV[5], ARGV[4], note)
return {1, id}
`);

/** KEYS: log, meta. ARGV: cutoff ms. Moves the floor to the newest entry older than the cutoff and trims. */
const trimScript = luaScript(`
local old = redis.call('XREVRANGE', KEYS[1], '(' .. ARGV[1] .. '-0', '-', 'COUNT', 1)
if #old == 0 then return 0 end
redis.call('HSET', KEYS[2], 'floor', old[1][1])
return redis.call('XTRIM', KEYS[1], 'MINID', ARGV[1] .. '-0')
`);

/** How long the commands that follow an append on Cluster are retried (a failover of their node). */
const afterAppendMs = 15_000;

/** Runs `fn` until it succeeds, with 0.1–1 s between attempts, for up to `afterAppendMs`; then throws its error. */
async function afterAppend<T>(fn: () => Promise<T>): Promise<T> {
  const started = Date.now();
  for (let attempt = 0; attempt < 50 && Date.now() - started < afterAppendMs; attempt++) {
    try {
      return await fn();
    } catch (err) {
      log('debug', 'fleet log: retrying after an append', { error: errorText(err), attempt });
      await new Promise((r) => setTimeout(r, backoffDelay(attempt, { baseMs: 100, maxMs: 1000 })));
    }
  }
  return fn(); // the last attempt: its error is the append's
}

function unavailable(err: unknown): never {
  if (err instanceof ApiError) throw err;
  throw new ApiError('unavailable', `The fleet log on Redis is unavailable: ${errorText(err)}`, {
    code: 'store-unavailable',
  });
}

/**
 * The JSON text of a value: kept for a value frozen whole (a configuration object as a read
 * gives it), which a pass puts into the logs of hundreds of sites.
 */
const texts = new WeakMap<object, string>();
function jsonOf(v: JsonObject): string {
  if (!isDeepFrozen(v)) return JSON.stringify(v);
  let t = texts.get(v);
  if (t === undefined) texts.set(v, (t = JSON.stringify(v)));
  return t;
}

/**
 * The start of an append note as the script writes it, `{"s":<site>,"p":"<prev>","v":"<version>"`
 * and `,"c":` when the changes follow (to the closing brace): the site (a JSON string, its
 * quotes escaped inside), the versions, and whether the changes are there.
 */
const noteHead = /^\{"s":("(?:[^"\\]|\\.)*"),"p":"(\d+-\d+)","v":"(\d+-\d+)"(,"c":)?/;

/**
 * The append notifications of every process (SUBSCRIBE; on Cluster the sharded SSUBSCRIBE of
 * every slot's channel, made again on the new primaries after a failover), on one connection
 * opened by the first `onAppend`.
 */
function appendFeed(target: RedisTarget | string, channels: readonly string[], cluster: boolean) {
  const listeners = new Set<(site: string, appended?: Appended) => void>();
  const resyncs = new Set<() => void>();
  let sub: ReturnType<typeof redisClient> | undefined;
  let subscribed = false;
  /** Subscribed again: what was appended meanwhile was announced to nobody here. */
  const resynced = () => {
    if (subscribed) for (const fn of resyncs) fn();
  };
  const deliver = (message: string) => {
    // The append script's note, its changes left as text (see noteHead).
    const head = noteHead.exec(message);
    if (head) {
      const site = JSON.parse(head[1]!) as string;
      const appended = head[4]
        ? { prev: head[2]!, version: head[3]!, text: message.slice(head[0].length, -1) }
        : undefined;
      for (const fn of listeners) fn(site, appended);
      return;
    }
    let note: { s?: unknown; p?: unknown; v?: unknown; c?: unknown };
    try {
      note = JSON.parse(message) as typeof note;
    } catch {
      return;
    }
    if (typeof note.s !== 'string') return;
    const appended =
      typeof note.p === 'string' && typeof note.v === 'string' && Array.isArray(note.c)
        ? { prev: note.p, version: note.v, changes: note.c as FleetChange[] }
        : undefined;
    for (const fn of listeners) fn(note.s, appended);
  };

  return {
    onAppend(listener: (site: string, appended?: Appended) => void) {
      listeners.add(listener);
      if (!sub) {
        const s = redisClient(target, 'fleet-sub');
        sub = s;
        const subscribe = async () => {
          if (!cluster) return s.subscribe(channels[0]!, deliver);
          await Promise.all(channels.map((c) => s.sSubscribe(c, deliver)));
        };
        onNewConnection(s, () => {
          if (!cluster) return whenSubscribedAgain(s, false, channels[0]!, subscribe, resynced);
          // Each slot's channel on its primary now (a channel whose node stayed is subscribed again too).
          void Promise.all(channels.map((c) => resubscribe(s, c, () => s.sSubscribe(c, deliver)))).then(resynced);
        });
        // Once subscribed the first time too: what was appended before the subscription was in
        // place (a stream that opened meanwhile waits for a notification) is read from the log.
        s.connect()
          .then(subscribe)
          .then(() => {
            subscribed = true;
            resynced();
          })
          .catch((err: unknown) => log('warn', 'fleet log subscription failed', { error: errorText(err) }));
      }
      return () => listeners.delete(listener);
    },
    onResync(listener: () => void) {
      resyncs.add(listener);
      return () => resyncs.delete(listener);
    },
    async close() {
      listeners.clear();
      resyncs.clear();
      if (sub) await closeClients(sub);
    },
  };
}

export async function openRedisFleetLog(target: RedisTarget | string): Promise<FleetLog> {
  const client = redisClient(target, 'fleet', { scripts: { fleetAppend: appendScript, fleetTrim: trimScript } });
  await client.connect().catch(unavailable);
  const cluster = toTarget(target).kind === 'cluster';
  const channel = channelOf(target, 'ep:fleet:appended');
  const keysOf = (site: string) => siteKeys(site, cluster);
  /** On Cluster, each slot's channel (index: the slot). */
  const slotChannels = cluster ? slotTags().map(clusterChannel) : [];
  const feed = appendFeed(target, cluster ? slotChannels : [channel], cluster);
  /** On Cluster: the sites this process added to the set of sites since its subscription was last made. */
  const inSet = new Set<string>();
  if (cluster) feed.onResync(() => inSet.clear());

  const guarded = async <T>(fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (err) {
      return unavailable(err);
    }
  };

  return {
    snapshot: (site) =>
      guarded(async () => {
        const k = keysOf(site);
        const [set, meta] = (await client.multi().hGetAll(k.set).hGetAll(k.meta).exec()) as unknown as [
          Record<string, string>,
          Record<string, string>,
        ];
        const objects = new Map<string, JsonObject>();
        for (const [key, text] of Object.entries(set)) objects.set(key, JSON.parse(text) as JsonObject);
        return { version: meta.head ?? '0-0', rev: Number(meta.rev ?? -1), objects };
      }),
    append: (site, expectedHead, rev, changes) =>
      guarded(async () => {
        const k = keysOf(site);
        const args = cluster
          ? [site, expectedHead, String(rev), slotChannels[keySlot(k.log)]!, 'SPUBLISH']
          : [site, expectedHead, String(rev), channel, 'PUBLISH'];
        args.push(String(changes.length));
        for (const c of changes) args.push(c.op, c.key, c.op === 'put' ? jsonOf(c.value) : '');
        const keys = cluster ? [k.set, k.log, k.meta] : [k.set, k.log, k.meta, sitesKey];
        const reply = (await client.fleetAppend(keys, args)) as [number, string];
        if (reply[0] !== 1) return undefined;
        if (cluster && !inSet.has(site)) {
          // Its own slot on Cluster: after the script, the set of sites. The entry is in the log
          // already: the SADD is retried through a failover of its node (a connection error, MOVED
          // until the client learnt the new primary) rather than failing an append that happened.
          // The site is added once a process (again after the subscription was made again: a
          // failover may have lost it), not at every append.
          await afterAppend(() => client.sAdd(sitesKey, site));
          inSet.add(site);
        }
        return reply[1];
      }),
    since: (site, after, limit) =>
      guarded(async () => {
        const v = parseVersion(after);
        if (!v || v[0] >= 2n ** 64n || v[1] >= 2n ** 64n) return 'reset' as const; // not a stream ID Redis takes
        const k = keysOf(site);
        // One round trip: the range is read with the bounds and dropped when `after` is outside them.
        const [meta, rows] = (await client
          .multi()
          .hGetAll(k.meta)
          .xRange(k.log, `(${after}`, '+', { COUNT: limit })
          .exec()) as unknown as [Record<string, string>, Array<{ id: string; message: Record<string, string> }>];
        if (!withinHistory(after, meta.floor ?? '0-0', meta.head ?? '0-0')) return 'reset' as const;
        return rows.map((r) => ({ version: r.id, changes: JSON.parse(String(r.message.c)) as FleetChange[] }));
      }),
    trim: (site, beforeMs) =>
      guarded(async () => {
        const k = keysOf(site);
        await client.fleetTrim([k.log, k.meta], [String(Math.floor(beforeMs))]);
      }),
    sites: () => guarded(async () => (await client.sMembers(sitesKey)).sort()),
    heads: (sites) =>
      guarded(async () => {
        if (sites.length === 0) return new Map<string, string>();
        if (cluster) {
          // A site per slot: one HGET each (node-redis pipelines them per node).
          const heads = await Promise.all(sites.map((s) => client.hGet(keysOf(s).meta, 'head')));
          return new Map(sites.map((s, i) => [s, heads[i] ?? '0-0']));
        }
        const multi = client.multi();
        for (const site of sites) multi.hGet(keysOf(site).meta, 'head');
        const replies = await multi.exec();
        return new Map(sites.map((s, i) => [s, typeof replies[i] === 'string' ? replies[i] : '0-0']));
      }),
    length: (site) => guarded(() => client.xLen(keysOf(site).log)),
    onAppend: (listener) => feed.onAppend(listener),
    onResync: (listener) => feed.onResync(listener),
    async close() {
      await feed.close();
      await closeClients(client);
    },
  };
}
