/**
 * Store on Redis (node-redis 5): the production backend, shared by every process of a
 * deployment. Layout and scripts: redis-lua.ts. Redis failures reach callers as rejected
 * promises carrying ApiError 'unavailable' (503), never as crashes: each connection has an
 * 'error' listener that logs, node-redis reconnects on its own, and commands issued while
 * disconnected fail at once instead of queueing without bound.
 */
import { ApiError } from '../lib/errors.js';
import { isObject } from '../lib/json.js';
import { log } from '../lib/log.js';
import {
  closeClients,
  onNewConnection,
  redisClient,
  replicaConfirmation,
  scanKeys,
  type RedisTarget,
} from '../lib/redis.js';
import { etagOf } from './etag.js';
import { changesChannel, layout, storeScripts } from './redis-lua.js';
import { createReadCache } from './read-cache.js';
import { createListCache } from './list-cache.js';
import type { CommitResult, Entry, RevisionNote, Store, StoredRevision, WriteOp } from './store.js';
import { decodeNote, defaultHistoryMs, encodeNote } from './history.js';
import { errorText } from '../lib/error-text.js';

const cfgKey = (key: string) => layout.cfgPrefix + key;
const kvKey = (key: string) => layout.kvPrefix + key;

/** Translates a node-redis failure into the API's error (one place, see STYLE "Errors"). */
function unavailable(err: unknown): never {
  if (err instanceof ApiError) throw err;
  const message = errorText(err);
  throw new ApiError('unavailable', `The Redis store is unavailable: ${message}`, { code: 'store-unavailable' });
}

async function guarded<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    return unavailable(err);
  }
}

/** Builds the KEYS and ARGV of commitScript (layout documented there). */
export function commitArgs(
  ops: WriteOp[],
  channel: string,
  history: { note?: RevisionNote; keepMs: number; now: number } = { keepMs: defaultHistoryMs, now: Date.now() },
): { keys: string[]; args: string[]; etags: Record<string, string> } {
  const keys: string[] = [];
  const args: string[] = [String(ops.length), channel];
  const etags: Record<string, string> = {};
  for (const op of ops) {
    keys.push(cfgKey(op.key));
    const e = op.expect;
    const mode = e === undefined ? '' : e === null ? 'n' : e === '*' ? '*' : 'e';
    let packed = '';
    if (op.op === 'put') {
      const etag = etagOf(op.value);
      etags[op.key] = etag;
      packed = etag + '\n' + JSON.stringify(op.value);
    } else {
      delete etags[op.key];
    }
    args.push(op.op, op.key, mode, mode === 'e' && typeof e === 'string' ? e : '', packed);
  }
  keys.push(layout.index, layout.revision, layout.history);
  args.push(history.note ? encodeNote(history.note) : '', `${Math.max(0, history.now - history.keepMs)}-0`);
  return { keys, args, etags };
}

function toEntry(key: string, v: unknown, e: unknown): Entry | undefined {
  if (typeof v !== 'string' || typeof e !== 'string') return undefined;
  let value: unknown;
  try {
    value = JSON.parse(v);
  } catch {
    value = undefined;
  }
  if (!isObject(value))
    throw new ApiError('internal', `Stored object ${key} is not a JSON object; fix ${cfgKey(key)} in Redis`, { key });
  return { key, value, etag: e };
}

/** Escapes glob characters so SCAN MATCH treats the prefix literally. */
function globLiteral(s: string): string {
  return s.replace(/[*?[\]\\]/g, (c) => '\\' + c);
}

export async function openRedisStore(target: RedisTarget | string, opts: { historyMs?: number } = {}): Promise<Store> {
  const keepMs = opts.historyMs ?? defaultHistoryMs;
  const client = redisClient(target, 'store', { scripts: storeScripts });
  await guarded(async () => {
    await client.connect();
  });

  const channel = changesChannel(target);
  const replicated = replicaConfirmation(client, target);
  let subscriber: ReturnType<typeof redisClient> | undefined;
  let subscribing: Promise<void> | undefined;
  const listeners = new Set<(keys: string[]) => void>();

  const reads = createReadCache({ maxAgeMs: 1000, maxEntries: 10_000 });

  /** The entries of `keys` that exist. */
  async function readMany(keys: string[]): Promise<Map<string, Entry>> {
    const out = new Map<string, Entry>();
    if (keys.length === 0) return out;
    const multi = client.multi();
    for (const k of keys) multi.hmGet(cfgKey(k), ['v', 'e']);
    const replies = await multi.exec();
    keys.forEach((k, i) => {
      const reply = replies[i];
      const entry = Array.isArray(reply) ? toEntry(k, reply[0], reply[1]) : undefined;
      if (entry) out.set(k, entry);
    });
    return out;
  }

  async function readEtags(prefix: string): Promise<{ revision: number; etags: Map<string, string> }> {
    const reply = await client.storeEtags([layout.index, layout.revision], [layout.cfgPrefix, prefix]);
    if (!Array.isArray(reply)) throw new Error('unexpected reply from the etags script');
    const etags = new Map<string, string>();
    for (let i = 1; i + 1 < reply.length; i += 2) etags.set(String(reply[i]), String(reply[i + 1]));
    return { revision: Number(reply[0]), etags };
  }

  const lists = createListCache(
    {
      async all(prefix) {
        // '0' is the byte after '/', so [prefix/ .. (prefix0 is exactly the keys below prefix.
        const keys =
          prefix === ''
            ? await client.zRange(layout.index, 0, -1)
            : [prefix, ...(await client.zRangeByLex(layout.index, `[${prefix}/`, `(${prefix}0`))];
        return [...(await readMany(keys)).values()].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
      },
      some: readMany,
      etags: async (prefix) => (await readEtags(prefix)).etags,
    },
    { maxAgeMs: 1000, maxLists: 64 },
  );
  /** Both caches follow every change notification and this process's commits. */
  const invalidate = (keys: string[]) => {
    reads.invalidate(keys);
    lists.invalidate(keys);
  };
  const setLive = (live: boolean) => {
    reads.setLive(live);
    lists.setLive(live);
  };

  function deliver(message: string): void {
    let keys: unknown;
    try {
      keys = JSON.parse(message);
    } catch {
      return;
    }
    // cjson encodes an empty Lua table as {}: treat anything but an array of strings as no keys.
    if (!Array.isArray(keys)) return;
    const changed = keys.filter((k): k is string => typeof k === 'string');
    invalidate(changed);
    for (const l of listeners) {
      try {
        l(changed);
      } catch (err) {
        log('error', 'store change listener failed', { error: errorText(err) });
      }
    }
  }

  /** True once the first SUBSCRIBE succeeded (node-redis re-subscribes after a reconnect). */
  let subscribed = false;

  function startSubscriber(): void {
    if (subscribing) return;
    const sub = redisClient(target, 'store-changes');
    subscriber = sub;
    // Notifications may be lost while this connection is down: cache nothing until it is back.
    sub.on('error', () => setLive(false));
    sub.on('end', () => setLive(false));
    onNewConnection(sub, () => {
      // A reconnect re-subscribes before 'ready'; after a failover (Sentinel) the
      // subscription moves to the new primary on its own, soon after: the cache waits a
      // second more (what it keeps is at most a second old anyway).
      setLive(false);
      if (!subscribed) return;
      if ('acquire' in sub) setTimeout(() => setLive(true), 1000).unref();
      else setLive(true);
    });
    subscribing = sub
      .connect()
      .then(() => sub.subscribe(channel, deliver))
      .then(() => {
        subscribed = true;
        setLive(true);
      })
      .catch((err: unknown) => {
        // Reconnection re-subscribes on its own; a first failure is only logged.
        log('error', 'store change subscription failed', { error: errorText(err) });
      });
  }

  const store: Store = {
    kind: 'redis',

    peek: (key) => reads.lookup(key),

    get: (key, opts) => {
      if (!opts?.fresh) {
        const hit = reads.lookup(key);
        if (hit !== 'miss') return Promise.resolve(hit);
      }
      const fetch = () =>
        guarded(async () => {
          const [v, e] = await client.hmGet(cfgKey(key), ['v', 'e']);
          return toEntry(key, v, e);
        });
      // Cached only while someone listens to changes (the subscription keeps the cache true).
      return opts?.fresh ? fetch() : reads.load(key, fetch);
    },

    // From the list cache while the change subscription is up (list-cache.ts), else the store.
    list: (prefix) => guarded(() => lists.list(prefix)),

    etags: (prefix) => guarded(() => readEtags(prefix)),

    commit: (ops, note) =>
      guarded(async (): Promise<CommitResult> => {
        if (ops.length === 0) return { ok: true, etags: {}, revision: await store.revision() };
        // A listener registered before this commit must see it: wait for its subscription.
        await subscribing;
        // CONFIG_HISTORY=0: no history is kept.
        const withNote = note && keepMs > 0 ? { note } : {};
        const { keys, args, etags } = commitArgs(ops, channel, { ...withNote, keepMs, now: Date.now() });
        const reply = await client.storeCommit(keys, args).finally(() => invalidate(ops.map((o) => o.key)));
        if (!Array.isArray(reply)) throw new Error('unexpected reply from the commit script');
        if (reply[0] === 1) {
          await replicated();
          return { ok: true, etags, revision: Number(reply[1]) };
        }
        const reason = reply[2];
        if (reason !== 'exists' && reason !== 'missing' && reason !== 'etag-mismatch')
          throw new Error(`unexpected commit reason ${String(reason)}`);
        return { ok: false, key: String(reply[1]), reason };
      }),

    revision: () => guarded(async () => Number((await client.get(layout.revision)) ?? 0)),

    history: ({ upTo, limit }) =>
      guarded(async () => {
        const out: StoredRevision[] = [];
        const cut = `${Math.max(0, Date.now() - keepMs)}-0`;
        // Newest first, a page at a time, until `limit` revisions at or below `upTo` (IDs are times, not revisions).
        let end = '+';
        for (let pages = 0; out.length < limit && pages < 10_000; pages++) {
          const page = await client.xRevRange(layout.history, end, cut, { COUNT: 200 });
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
      }),

    onChange(listener) {
      listeners.add(listener);
      startSubscriber();
      return () => {
        listeners.delete(listener);
      };
    },

    kvGet: (key) => guarded(async () => (await client.get(kvKey(key))) ?? undefined),

    kvSet: (key, value, ttlMs, opts) =>
      guarded(async () => {
        if (ttlMs !== undefined)
          await client.set(kvKey(key), value, { expiration: { type: 'PX', value: Math.max(1, Math.ceil(ttlMs)) } });
        else await client.set(kvKey(key), value);
        // A durable value (a token issued) must survive a failover like a configuration write.
        if (opts?.durable) await replicated();
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
        const keys = await scanKeys(client, globLiteral(layout.kvPrefix + prefix) + '*');
        return [...new Set(keys.map((k) => k.slice(layout.kvPrefix.length)))].sort();
      }),

    async close() {
      listeners.clear();
      setLive(false);
      await subscribing;
      await closeClients(...(subscriber ? [client, subscriber] : [client]));
    },
  };
  return store;
}
