/**
 * Store on Redis (node-redis 5): the production backend, shared by every process of a
 * deployment. Layout and scripts: redis-lua.ts. Redis failures reach callers as rejected
 * promises carrying ApiError 'unavailable' (503), never as crashes: each connection has an
 * 'error' listener that logs, node-redis reconnects on its own, and commands issued while
 * disconnected fail at once instead of queueing without bound.
 */
import { answerWithin, redisAnswerMs } from '../lib/deadline.js';
import { ApiError } from '../lib/errors.js';
import { isObject } from '../lib/json.js';
import { log } from '../lib/log.js';
import {
  closeClients,
  onNewConnection,
  redisClient,
  replicaConfirmation,
  whenSubscribedAgain,
  scanKeys,
  toTarget,
  type RedisClient,
  type RedisTarget,
} from '../lib/redis.js';
import { etagOf } from './etag.js';
import { keySlot } from '../lib/redis-cluster.js';
import { changesChannel, layout, layoutOf, storeScripts, type Layout } from './redis-lua.js';
import { createReadCache } from './read-cache.js';
import { createListCache, type ListCache, type ListSource } from './list-cache.js';
import type {
  CommitResult,
  Entry,
  EtagsAt,
  EtagsSince,
  RevisionNote,
  Store,
  StoredRevision,
  WriteOp,
} from './store.js';
import { randomBytes } from 'node:crypto';
import { decodeNote, defaultHistoryMs, encodeNote } from './history.js';
import { errorText } from '../lib/error-text.js';
import type { JsonObject } from '../lib/json.js';

/** Translates a node-redis failure into the API's error (one place, see STYLE "Errors"). */
function unavailable(err: unknown): never {
  if (err instanceof ApiError) throw err;
  const message = errorText(err);
  throw new ApiError('unavailable', `The Redis store is unavailable: ${message}`, { code: 'store-unavailable' });
}

/** A store operation: Redis's failure, or no answer within redisAnswerMs, is 503 store-unavailable. */
async function guarded<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await answerWithin(fn(), redisAnswerMs, 'no answer from Redis');
  } catch (err) {
    return unavailable(err);
  }
}

/** Builds the KEYS and ARGV of commitScript (layout documented there). */
export function commitArgs(
  ops: WriteOp[],
  channel: string,
  history: { note?: RevisionNote; keepMs: number; now: number } = { keepMs: defaultHistoryMs, now: Date.now() },
  lay: Layout = layout,
): { keys: string[]; args: string[]; etags: Record<string, string> } {
  const keys: string[] = [];
  const args: string[] = [String(ops.length), channel];
  const etags: Record<string, string> = {};
  const texts = new Map<JsonObject, string>();
  for (const op of ops) {
    keys.push(lay.cfgPrefix + op.key);
    const e = op.expect;
    const mode = e === undefined ? '' : e === null ? 'n' : e === '*' ? '*' : 'e';
    let packed = '';
    if (op.op === 'put') {
      const etag = etagOf(op.value);
      etags[op.key] = etag;
      const text = JSON.stringify(op.value);
      texts.set(op.value, text);
      packed = etag + '\n' + text;
    } else {
      delete etags[op.key];
    }
    args.push(op.op, op.key, mode, mode === 'e' && typeof e === 'string' ? e : '', packed);
  }
  keys.push(lay.index, lay.revision, lay.history, lay.changedLog);
  args.push(
    history.note ? encodeNote(history.note, (v) => texts.get(v)) : '',
    `${Math.max(0, history.now - history.keepMs)}-0`,
    randomBytes(6).toString('base64url'),
  );
  return { keys, args, etags };
}

function toEntry(key: string, v: unknown, e: unknown, lay: Layout = layout): Entry | undefined {
  if (typeof v !== 'string' || typeof e !== 'string') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(v);
  } catch {
    value = undefined;
  }
  if (!isObject(value))
    throw new ApiError('internal', `Stored object ${key} is not a JSON object; fix ${lay.cfgPrefix + key} in Redis`, {
      key,
    });
  return { key, value, etag: e };
}

/** Escapes glob characters so SCAN MATCH treats the prefix literally. */
function globLiteral(s: string): string {
  return s.replace(/[*?[\]\\]/g, (c) => '\\' + c);
}

type StoreClient = ReturnType<typeof redisClient<typeof storeScripts>>;
type ReadCache = ReturnType<typeof createReadCache>;

/** The keys of a change notification; undefined when it is not one. */
function changedKeys(message: string): string[] | undefined {
  let keys: unknown;
  try {
    keys = JSON.parse(message);
  } catch {
    return undefined;
  }
  // cjson encodes an empty Lua table as {}: treat anything but an array of strings as no keys.
  if (!Array.isArray(keys)) return undefined;
  return keys.filter((k): k is string => typeof k === 'string');
}

/**
 * The change notifications of every process's commits: one subscriber connection (SUBSCRIBE;
 * on Cluster the sharded SSUBSCRIBE, subscribed again on the new primary after a failover),
 * started by the first `onChange`. The read cache serves only while it is subscribed.
 *
 * Pub/sub keeps nothing for a subscriber that is away: the commits made while the connection
 * moved to a new primary (or reconnected) are announced to nobody, and a listener that waits
 * for a change (the fleet projector, an exporter supervisor, a watch) would miss them. So once
 * subscribed again, every listener hears "any of these may have changed" for every key the
 * configuration holds now and every key announced before (a key deleted meanwhile is among
 * them): each re-reads what it depends on, which is what a lost notification would have made it do.
 */
function changeFeed(target: RedisTarget | string, reads: ReadCache, allKeys: () => Promise<string[]>) {
  const channel = changesChannel(target);
  const sharded = toTarget(target).kind === 'cluster';
  const listeners = new Set<(keys: string[]) => void>();
  let subscriber: RedisClient | undefined;
  let subscribing: Promise<void> | undefined;
  /** True once the first SUBSCRIBE succeeded (node-redis re-subscribes after a reconnect). */
  let subscribed = false;
  /** Every key announced so far (a resubscription announces them again: see above). */
  const announced = new Set<string>();

  function deliver(message: string): void {
    const keys = changedKeys(message);
    if (keys) announce(keys);
  }

  function announce(changed: string[]): void {
    if (announced.size < 100_000) for (const k of changed) announced.add(k);
    reads.invalidate(changed);
    for (const l of listeners) {
      try {
        l(changed);
      } catch (err) {
        log('error', 'store change listener failed', { error: errorText(err) });
      }
    }
  }

  const subscribe = (sub: RedisClient) =>
    sharded ? sub.sSubscribe(channel, deliver) : sub.subscribe(channel, deliver);

  const again = resubscribed(allKeys, announced, announce);

  function start(): void {
    if (subscribing) return;
    const sub = redisClient(target, 'store-changes');
    subscriber = sub;
    // Notifications may be lost while this connection is down: cache nothing until it is back.
    sub.on('error', () => reads.setLive(false));
    sub.on('end', () => reads.setLive(false));
    onNewConnection(sub, () => {
      // A reconnect re-subscribes before 'ready'; after a failover (Sentinel) the
      // subscription moves to the new primary on its own, soon after: the cache waits a
      // second more (what it keeps is at most a second old anyway). On Cluster the
      // subscription is made again on the channel's new primary.
      reads.setLive(false);
      if (!subscribed) return;
      const live = () => {
        reads.setLive(true);
        void again.announceAll();
      };
      whenSubscribedAgain(sub, sharded, channel, () => subscribe(sub), live);
    });
    subscribing = sub
      .connect()
      .then(() => subscribe(sub))
      .then(() => {
        subscribed = true;
        reads.setLive(true);
        again.noteStart();
      })
      .catch((err: unknown) => {
        // Reconnection re-subscribes on its own; a first failure is only logged.
        log('error', 'store change subscription failed', { error: errorText(err) });
      });
  }

  return {
    channel,
    /** A listener registered before a commit must see it: the commit waits for this. */
    ready: () => subscribing,
    onChange(listener: (keys: string[]) => void) {
      listeners.add(listener);
      start();
      return () => {
        listeners.delete(listener);
      };
    },
    async close() {
      listeners.clear();
      again.close();
      reads.setLive(false);
      await subscribing;
      if (subscriber) await closeClients(subscriber);
    },
  };
}

/**
 * What changeFeed does once subscribed again: announces every key (see changeFeed), trying the
 * listing again every second (up to 2 minutes) when it fails, as it can while the command
 * connection is still reconnecting (the subscription often comes back first): the listeners
 * would otherwise keep what they read before the outage. And it says loudly when Redis came
 * back empty (restarted with no persistence): nothing here re-creates what the start made (the
 * admin user, EDGEPLANE_CONFIG's objects, the strongbox's check).
 */
function resubscribed(
  allKeys: () => Promise<string[]>,
  announced: ReadonlySet<string>,
  announce: (keys: string[]) => void,
) {
  /** How many keys the store held when last listed (at the first subscription, then at each resubscription). */
  let knownKeys = 0;
  let retry: NodeJS.Timeout | undefined;

  async function announceAll(attempt = 0): Promise<void> {
    clearTimeout(retry);
    retry = undefined;
    try {
      const now = await allKeys();
      const keys = new Set([...announced, ...now]);
      log('info', 'store: change subscription restored; every listener re-reads', { keys: keys.size });
      const before = knownKeys;
      knownKeys = now.length;
      if (now.length === 0 && (before > 0 || announced.size > 0))
        log('error', 'store: Redis came back empty: the configuration, users and tokens are gone', {
          'keys-known-before': Math.max(before, announced.size),
          fix: 'restart this process (it makes the admin user from ADMIN_PASSWORD and applies EDGEPLANE_CONFIG again), or give Redis persistence (appendonly yes)',
        });
      announce([...keys]);
    } catch (err) {
      if (attempt === 0)
        log('warn', 'store: cannot list the configuration after a resubscription; trying again every second', {
          error: errorText(err),
        });
      if (attempt < 120) {
        retry = setTimeout(() => void announceAll(attempt + 1), 1000);
        retry.unref();
      } else log('error', 'store: gave up listing the configuration after a resubscription', { error: errorText(err) });
    }
  }

  return {
    announceAll,
    /** The first subscription: how many keys there are, for telling an empty Redis later. */
    noteStart(): void {
      void allKeys().then(
        (keys) => (knownKeys = Math.max(knownKeys, keys.length)),
        () => undefined,
      );
    },
    close: () => clearTimeout(retry),
  };
}

/** What the list cache reads: every object under a prefix, some objects, the ETags under a prefix. */
function listSource(client: StoreClient, lay: Layout): ListSource {
  const some = async (keys: string[]): Promise<Map<string, Entry>> => {
    const out = new Map<string, Entry>();
    if (keys.length === 0) return out;
    // One slot on Cluster (the `{ep}` tag): one MULTI on one node.
    const multi = client.multi();
    for (const k of keys) multi.hmGet(lay.cfgPrefix + k, ['v', 'e']);
    const replies = await multi.exec();
    keys.forEach((k, i) => {
      const reply = replies[i];
      const entry = Array.isArray(reply) ? toEntry(k, reply[0], reply[1], lay) : undefined;
      if (entry) out.set(k, entry);
    });
    return out;
  };
  return {
    some,
    async all(prefix) {
      // '0' is the byte after '/', so [prefix/ .. (prefix0 is exactly the keys below prefix.
      const keys =
        prefix === ''
          ? await client.zRange(lay.index, 0, -1)
          : [prefix, ...(await client.zRangeByLex(lay.index, `[${prefix}/`, `(${prefix}0`))];
      return [...(await some(keys)).values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    },
    etags: async (prefix) => (await readEtags(client, lay, prefix)).etags,
  };
}

async function readEtags(
  client: StoreClient,
  lay: Layout,
  prefix: string,
): Promise<{ revision: number; mark: string; etags: Map<string, string> }> {
  const reply = await client.storeEtags([lay.index, lay.revision, lay.changedLog], [lay.cfgPrefix, prefix]);
  if (!Array.isArray(reply)) throw new Error('unexpected reply from the etags script');
  const etags = new Map<string, string>();
  for (let i = 2; i + 1 < reply.length; i += 2) etags.set(String(reply[i]), String(reply[i + 1]));
  return { revision: Number(reply[0]), mark: String(reply[1]), etags };
}

/** The ETags of what changed after `at` (etagsSinceScript), or undefined when the store cannot tell. */
async function readEtagsSince(client: StoreClient, lay: Layout, at: EtagsAt): Promise<EtagsSince | undefined> {
  const reply = await client.storeEtagsSince(
    [lay.revision, lay.changedLog],
    [lay.cfgPrefix, String(at.revision), at.mark],
  );
  if (!Array.isArray(reply)) throw new Error('unexpected reply from the etags-since script');
  if (Number(reply[0]) < 0) return undefined;
  const changed = new Map<string, string | undefined>();
  for (let i = 2; i + 1 < reply.length; i += 2) changed.set(String(reply[i]), String(reply[i + 1]) || undefined);
  return { revision: Number(reply[0]), mark: String(reply[1]), changed };
}

/** get, list, etags and etagsSince: the configuration's reads (through the read and list caches when not `fresh`). */
function configReads(
  client: StoreClient,
  lay: Layout,
  reads: ReadCache,
  lists: ListCache,
): Pick<Store, 'get' | 'list' | 'etags' | 'etagsSince'> {
  return {
    get: (key, opts) => {
      if (!opts?.fresh) {
        const hit = reads.lookup(key);
        if (hit !== 'miss') return Promise.resolve(hit);
      }
      const fetch = () =>
        guarded(async () => {
          const [v, e] = await client.hmGet(lay.cfgPrefix + key, ['v', 'e']);
          return toEntry(key, v, e, lay);
        });
      // Cached only while someone listens to changes (the subscription keeps the cache true).
      return opts?.fresh ? fetch() : reads.load(key, fetch);
    },

    // From the list cache while the change subscription is up (list-cache.ts), else the store.
    list: (prefix) => guarded(() => lists.list(prefix)),

    etags: (prefix) => guarded(() => readEtags(client, lay, prefix)),
    etagsSince: (at) => (at.mark === '' ? Promise.resolve(undefined) : guarded(() => readEtagsSince(client, lay, at))),
  };
}

/** The configuration's history stream, newest first (retention by the revision's time). */
function historyReader(client: StoreClient, lay: Layout, keepMs: number): Store['history'] {
  return ({ upTo, limit }) =>
    guarded(async () => {
      const out: StoredRevision[] = [];
      const cut = `${Math.max(0, Date.now() - keepMs)}-0`;
      // Newest first, a page at a time, until `limit` revisions at or below `upTo` (IDs are times, not revisions).
      let end = '+';
      for (let pages = 0; out.length < limit && pages < 10_000; pages++) {
        const page = await client.xRevRange(lay.history, end, cut, { COUNT: 200 });
        for (const e of page) {
          const r = Number(e.message.r);
          if (upTo !== undefined && r > upTo) continue;
          const rev = decodeNote(r, String(e.message.d));
          // Retention is by the revision's time (the stream's own trim is approximate: MINID ~).
          if (rev && Date.parse(rev.time) >= Date.now() - keepMs) out.push(rev);
          if (out.length >= limit) break;
        }
        if (page.length < 200) break;
        end = `(${page[page.length - 1]!.id}`;
      }
      return out;
    });
}

/** The kv area: single keys `ep:kv:<key>` (each its own slot on Cluster); a durable value is set on `writer`. */
function kvArea(
  client: StoreClient,
  writer: StoreClient,
  lay: Layout,
  replicated: (key?: string) => Promise<void>,
  cluster: boolean,
): Pick<Store, 'kvGet' | 'kvSet' | 'kvSetMany' | 'kvDel' | 'kvIncr' | 'kvKeys'> {
  const kvKey = (key: string) => lay.kvPrefix + key;
  return {
    kvGet: (key) => guarded(async () => (await client.get(kvKey(key))) ?? undefined),

    kvSet: (key, value, ttlMs, opts) =>
      guarded(async () => {
        // A durable value (a token issued) must survive a failover like a configuration write:
        // set on the connection that waits for a replica.
        const c = opts?.durable ? writer : client;
        if (ttlMs !== undefined)
          await c.set(kvKey(key), value, { expiration: { type: 'PX', value: Math.max(1, Math.ceil(ttlMs)) } });
        else await c.set(kvKey(key), value);
        if (opts?.durable) await replicated(kvKey(key));
      }),

    // One MSET; on Cluster one MSET a slot (keys that share a hash tag, `fleet:{applied}:<site>`,
    // are one command), pipelined.
    kvSetMany: (entries) =>
      guarded(async () => {
        if (entries.length === 0) return;
        const pairs = entries.map(([key, value]) => [kvKey(key), value] as [string, string]);
        if (!cluster) return void (await client.mSet(pairs));
        const bySlot = new Map<number, Array<[string, string]>>();
        for (const pair of pairs) {
          const slot = keySlot(pair[0]);
          const group = bySlot.get(slot);
          if (group) group.push(pair);
          else bySlot.set(slot, [pair]);
        }
        await Promise.all([...bySlot.values()].map((group) => client.mSet(group)));
      }),

    kvDel: (key) =>
      guarded(async () => {
        await client.del(kvKey(key));
      }),

    kvIncr: (key, by, ttlMs) =>
      guarded(async () => {
        if (!Number.isSafeInteger(by))
          throw new ApiError('internal', `kvIncr needs a whole number, got ${by}`, { key });
        const ttl = ttlMs === undefined ? '' : String(Math.max(1, Math.ceil(ttlMs)));
        return Number(await client.storeIncr([kvKey(key)], [String(by), ttl]));
      }),

    kvKeys: (prefix) =>
      guarded(async () => {
        const keys = await scanKeys(client, globLiteral(lay.kvPrefix + prefix) + '*');
        return [...new Set(keys.map((k) => k.slice(lay.kvPrefix.length)))].sort();
      }),
  };
}

export async function openRedisStore(target: RedisTarget | string, opts: { historyMs?: number } = {}): Promise<Store> {
  const keepMs = opts.historyMs ?? defaultHistoryMs;
  const lay = layoutOf(target);
  const client = redisClient(target, 'store', { scripts: storeScripts });
  // Commits, and the WAIT for a replica that follows each (WAIT covers what its own connection
  // wrote), on a connection of their own: a WAIT holds its connection until a replica answers,
  // and the reads behind it (a projector's pass after the commit it announced) waited too.
  const writer = redisClient(target, 'store-commit', { scripts: storeScripts });
  await guarded(async () => {
    await client.connect();
    await writer.connect();
  });
  const replicated = replicaConfirmation(writer, target);
  const single = createReadCache({ maxAgeMs: 1000, maxEntries: 10_000 });
  const lists = createListCache(listSource(client, lay), { maxAgeMs: 1000, maxLists: 64 });
  // Both caches follow the change notifications and this process's commits.
  const reads: ReadCache = {
    ...single,
    invalidate(keys) {
      single.invalidate(keys);
      lists.invalidate(keys);
    },
    setLive(live) {
      single.setLive(live);
      lists.setLive(live);
    },
  };
  const feed = changeFeed(target, reads, () => client.zRange(lay.index, 0, -1));

  const store: Store = {
    kind: 'redis',
    peek: (key) => reads.lookup(key),
    ...configReads(client, lay, reads, lists),

    commit: (ops, note) =>
      guarded(async (): Promise<CommitResult> => {
        if (ops.length === 0) return { ok: true, etags: {}, revision: await store.revision() };
        // A listener registered before this commit must see it: wait for its subscription.
        await feed.ready();
        // CONFIG_HISTORY=0: no history is kept.
        const withNote = note && keepMs > 0 ? { note } : {};
        const { keys, args, etags } = commitArgs(ops, feed.channel, { ...withNote, keepMs, now: Date.now() }, lay);
        const reply = await writer.storeCommit(keys, args).finally(() => reads.invalidate(ops.map((o) => o.key)));
        if (!Array.isArray(reply)) throw new Error('unexpected reply from the commit script');
        if (reply[0] === 1) {
          await replicated(lay.revision);
          return { ok: true, etags, revision: Number(reply[1]) };
        }
        const reason = reply[2];
        if (reason !== 'exists' && reason !== 'missing' && reason !== 'etag-mismatch')
          throw new Error(`unexpected commit reason ${String(reason)}`);
        return { ok: false, key: String(reply[1]), reason };
      }),

    revision: () => guarded(async () => Number((await client.get(lay.revision)) ?? 0)),
    history: historyReader(client, lay, keepMs),
    onChange: (listener) => feed.onChange(listener),
    ...kvArea(client, writer, lay, replicated, toTarget(target).kind === 'cluster'),

    async close() {
      await feed.close();
      await closeClients(client, writer);
    },
  };
  return store;
}
