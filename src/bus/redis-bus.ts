/**
 * The bus on Redis streams. Two connections in all, whatever the number of
 * exporters: `cmd` for every non-blocking command (node-redis pipelines concurrent
 * commands on it) and the notifier's blocking XREAD (on Cluster: a connection per node for
 * `cmd`, and a blocking one per slot of watched streams, `slot-notifiers.ts`). Commands issued while Redis is down
 * wait in node-redis's offline queue and run after the reconnect.
 */
import { answerWithin, redisAnswerMs } from '../lib/deadline.js';
import { hostname } from 'node:os';
import { log } from '../lib/log.js';
import {
  closeClients,
  evalScript,
  leftUnsent,
  luaScript,
  redisClient,
  replicaConfirmation,
  scanKeys,
  send,
  toTarget,
  type RedisTarget,
} from '../lib/redis.js';
import {
  BusError,
  entryObject,
  produceFields,
  streamPrefix,
  type Bus,
  type GroupRead,
  type ProduceInput,
  type GroupStart,
  type StartAt,
  type TopicInfo,
  countedOutcomes,
  noCounts,
  type AckCount,
  type OutcomeCounts,
} from './bus.js';
import { Discovery } from './discovery.js';
import { Notifier } from './notifier.js';
import { SlotNotifiers } from './slot-notifiers.js';
import {
  asString,
  consumerNames,
  groupBacklog,
  groupLag,
  parseEntries,
  parsePairs,
  parseStreams,
  pendingIds,
} from './redis-replies.js';
import { errorText } from '../lib/error-text.js';

/** Liveness of consumers: a key with a ttl per consumer, and the set of those ever seen. */
const aliveKey = (consumer: string): string => `edgeplane:alive:${consumer}`;
const consumersKey = 'edgeplane:consumers';
/** A dead consumer is looked after (its pending entries claimed) this long after its last heartbeat. */
const forgetDeadMs = 3_600_000;

/** True when a heartbeat value names a process of this host that no longer runs. */
function goneHere(value: string): boolean {
  try {
    const v = JSON.parse(value) as { host?: unknown; pid?: unknown };
    if (v.host !== hostname() || typeof v.pid !== 'number' || v.pid === process.pid) return false;
    process.kill(v.pid, 0);
    return false;
  } catch (err) {
    return (err as { code?: unknown }).code === 'ESRCH';
  }
}

/** NOGROUP: the group (or the stream) vanished, e.g. Redis restarted without persistence. */
function translate(err: unknown): Error {
  const text = errorText(err);
  // A NOGROUP raised inside a script arrives with the script's prefix.
  if (text.startsWith('NOGROUP') || /^ERR .*NOGROUP/.test(text)) return new BusError('no-group', text);
  return err instanceof Error ? err : new BusError('unavailable', text);
}

/**
 * A group `since` a time (GroupStart): at 0 when the stream's oldest entry is no older than
 * ARGV[2] ms (or it is empty), else after its last entry older than that (ARGV[3]: the
 * greatest ID of the millisecond before); an existing group is left as it is.
 */
const sinceGroupScript = luaScript(`
local key, group, since, before = KEYS[1], ARGV[1], tonumber(ARGV[2]), ARGV[3]
local first = redis.call('XRANGE', key, '-', '+', 'COUNT', 1)
local id = '0'
if #first > 0 and tonumber(string.match(first[1][1], '^(%d+)')) < since then
  id = redis.call('XREVRANGE', key, before, '-', 'COUNT', 1)[1][1]
end
local ok, err = pcall(redis.call, 'XGROUP', 'CREATE', key, group, id, 'MKSTREAM')
if not ok and not string.find(tostring(err), 'BUSYGROUP') then return redis.error_reply(tostring(err)) end
return 1`);

/** XGROUP SETID (creating the group when missing), then XACK of every pending entry, atomically. */
const setIdScript = luaScript(`
local key, group, id = KEYS[1], ARGV[1], ARGV[2]
local ok = pcall(redis.call, 'XGROUP', 'CREATE', key, group, id, 'MKSTREAM')
if not ok then redis.call('XGROUP', 'SETID', key, group, id) end
while true do
  local p = redis.call('XPENDING', key, group, '-', '+', 1000)
  if #p == 0 then break end
  local ids = {}
  for i, e in ipairs(p) do ids[i] = e[1] end
  redis.call('XACK', key, group, unpack(ids))
end
return 1`);

/**
 * XACK of the ids, and HINCRBY of each outcome by the number of its ids XACK acknowledged,
 * atomically; returns the totals of the counter name when ARGV[3] is '1' (else 0: reading and
 * sending them costs about a third of the script's time in Redis). KEYS: stream, counts hash;
 * ARGV: group, counter name, totals wanted, then runs of one outcome in ack order: the outcome,
 * the number n of its ids, and its n ids. The ids go to XACK straight from ARGV (`unpack` of a
 * range: no table and no string made an id; 4.4 against 5.1 µs of Redis a call at max-in-flight
 * 1 when a run was one argument split by string.gmatch). One XACK per run (and per 1000 ids)
 * counts exactly what acking each id in turn would: XACK acknowledges its ids in order and
 * returns how many were pending.
 */
const countedAckScript = luaScript(`
local key, counts, group, as = KEYS[1], KEYS[2], ARGV[1], ARGV[2]
local i = 4
while i <= #ARGV do
  local first, last, acked = i + 2, i + 1 + tonumber(ARGV[i + 1]), 0
  for s = first, last, 1000 do
    acked = acked + redis.call('XACK', key, group, unpack(ARGV, s, math.min(s + 999, last)))
  end
  if acked > 0 then redis.call('HINCRBY', counts, as .. '|' .. ARGV[i], acked) end
  i = last + 1
end
if ARGV[3] ~= '1' then return 0 end
return redis.call('HMGET', counts, as .. '|delivered', as .. '|dropped', as .. '|ignored', as .. '|filtered')`);

/** A token bucket (bus.ts rateToken): 0 when a token was taken, else the ms until one is there. */
const rateTokenScript = luaScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local rate, burst = tonumber(ARGV[1]), tonumber(ARGV[2])
local b = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(b[1]) or burst
local ts = tonumber(b[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - ts) * rate / 1000)
local wait = 0
if tokens >= 1 then tokens = tokens - 1 else wait = math.ceil((1 - tokens) * 1000 / rate) end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'ts', now)
redis.call('PEXPIRE', KEYS[1], math.ceil(burst * 1000 / rate) + 1000)
return wait`);

/** Deletes the counts fields of a group (every counter name starting with `<group>|`). */
const dropCountsScript = luaScript(`
local prefix = ARGV[1] .. '|'
for _, f in ipairs(redis.call('HKEYS', KEYS[1])) do
  if string.sub(f, 1, #prefix) == prefix then redis.call('HDEL', KEYS[1], f) end
end
return 1`);

/**
 * A produce (the API's, the audit trail's, a dead-letter append) waits at most this long unsent
 * while Redis is unreachable, then fails: the API answers 503 at once rather than hold the
 * request until Redis is back (the command client queues commands meanwhile, for the exporters'
 * acknowledgements), and a dead-letter append tries again.
 */
const produceQueueMs = 1000;

/** Why a command was not done: node-redis's bare "Timeout" of a command left unsent said in words. */
const unsentText = (err: unknown): string =>
  leftUnsent(err) ? `not sent within ${produceQueueMs} ms (Redis unreachable)` : errorText(err);

/** The counts hash of a stream: its hash tag is the stream key (one Cluster slot with it). */
export const countsKey = (streamKey: string): string => `edgeplane:counts:{${streamKey}}`;

function countsOf(raw: unknown): OutcomeCounts {
  const out = noCounts();
  if (Array.isArray(raw))
    countedOutcomes.forEach((o, i) => {
      const v = Number(raw[i] ?? 0);
      if (Number.isSafeInteger(v)) out[o] = v;
    });
  return out;
}

type BusCommand = Awaited<ReturnType<typeof commandClient>>;
type Confirm = (key?: string) => Promise<void>;

function commandClient(target: RedisTarget | string) {
  return redisClient(target, 'bus-command', {
    offlineQueue: true,
    scripts: {
      busSetId: setIdScript,
      busDropCounts: dropCountsScript,
      busRateToken: rateTokenScript,
    },
  });
}

/** Every topic: the streams `volga:*` (SCAN of every primary on Cluster). */
async function scanTopics(cmd: BusCommand): Promise<string[]> {
  const keys = await scanKeys(cmd, `${streamPrefix}*`, 'stream');
  return [...new Set(keys.map((k) => k.slice(streamPrefix.length)))].sort();
}

/** produce and topicInfo: a topic's stream. */
function topicMethods(cmd: BusCommand, replicated: Confirm): Pick<Bus, 'produce' | 'topicInfo'> {
  return {
    async produce(topic: string, msg: ProduceInput): Promise<string> {
      let id: string;
      try {
        const args = ['XADD', streamPrefix + topic, '*', ...produceFields(msg)];
        // Unsent after produceQueueMs (Redis unreachable), or unanswered after redisAnswerMs (stopped).
        id = asString(
          await answerWithin(
            send(cmd, args, undefined, { timeout: produceQueueMs }),
            redisAnswerMs,
            'no answer to the XADD',
          ),
        );
      } catch (err) {
        throw new BusError('unavailable', `Redis did not take the message: ${unsentText(err)}`);
      }
      await replicated(streamPrefix + topic);
      return id;
    },

    async topicInfo(topic: string): Promise<TopicInfo | undefined> {
      const key = streamPrefix + topic;
      const [type, len, last] = await Promise.all([
        send(cmd, ['TYPE', key]),
        send(cmd, ['XLEN', key]).catch(() => 0),
        send(cmd, ['XREVRANGE', key, '+', '-', 'COUNT', '1']).catch(() => null),
      ]);
      if (asString(type) !== 'stream') return undefined;
      const entry = parseEntries(last)[0];
      return {
        name: topic,
        length: typeof len === 'number' ? len : 0,
        'last-entry-id': entry?.id ?? null,
        'last-entry': entry ? entryObject(entry) : null,
      };
    },
  };
}

/** A consumer group: acknowledgements, counts, positions; the rate buckets. */
function groupMethods(
  cmd: BusCommand,
  replicated: Confirm,
): Pick<
  Bus,
  'ensureGroup' | 'ack' | 'counts' | 'rateToken' | 'backlog' | 'groupConsumers' | 'destroyGroup' | 'setGroupPosition'
> {
  return {
    async ensureGroup(topic: string, group: string, start: GroupStart): Promise<void> {
      if (start.at === 'since') {
        // One script: the oldest entry read and the group made from it, with no write between.
        await evalScript(cmd, sinceGroupScript, [
          'EVALSHA',
          sinceGroupScript.SHA1,
          '1',
          streamPrefix + topic,
          group,
          String(start.ms),
          `${start.ms - 1}-18446744073709551615`,
        ]).catch((err: unknown) => {
          throw translate(err);
        });
        return;
      }
      const id = start.at === 'end' ? '$' : start.at === 'beginning' ? '0' : start.id;
      try {
        await send(cmd, ['XGROUP', 'CREATE', streamPrefix + topic, group, id, 'MKSTREAM']);
      } catch (err) {
        if (!errorText(err).startsWith('BUSYGROUP')) throw translate(err);
      }
    },

    // Not async: the promise of the script's call is returned as it is (an async function
    // returning it would take two more turns of the microtask queue, an ack on the path of each
    // message at max-in-flight 1).
    ack(topic: string, group: string, ids: readonly string[], count?: AckCount): Promise<OutcomeCounts | undefined> {
      const key = streamPrefix + topic;
      if (!count) {
        if (ids.length === 0) return Promise.resolve(undefined);
        return send(cmd, ['XACK', key, group, ...ids]).then(() => undefined);
      }
      const totals = count.totals !== false;
      const args = ['EVALSHA', countedAckScript.SHA1, '2', key, countsKey(key), group, count.as, totals ? '1' : '0'];
      // Runs of one outcome (nearly always one run: every message delivered).
      for (let i = 0; i < ids.length;) {
        const outcome = count.outcomes[i]!;
        const at = args.length;
        args.push(outcome, '', ids[i++]!);
        while (i < ids.length && count.outcomes[i] === outcome) args.push(ids[i++]!);
        args[at + 1] = String(args.length - at - 2);
      }
      return evalScript(cmd, countedAckScript, args).then(
        (reply) => (totals ? countsOf(reply) : undefined),
        (err: unknown) => {
          throw translate(err);
        },
      );
    },

    async counts(topic: string, as: string): Promise<OutcomeCounts> {
      const key = streamPrefix + topic;
      return countsOf(await send(cmd, ['HMGET', countsKey(key), ...countedOutcomes.map((o) => `${as}|${o}`)]));
    },

    async rateToken(name: string, site: string, perSecond: number, burst: number): Promise<number> {
      const r = await cmd.busRateToken([`edgeplane:rate:${site}:${name}`], [String(perSecond), String(burst)]);
      return Number(r) || 0;
    },

    async backlog(topic: string, group: string): Promise<number | undefined> {
      const info = await send(cmd, ['XINFO', 'GROUPS', streamPrefix + topic]).catch(() => null);
      return groupBacklog(info, group);
    },

    async groupConsumers(topic: string, group: string): Promise<string[]> {
      try {
        return consumerNames(await send(cmd, ['XINFO', 'CONSUMERS', streamPrefix + topic, group]));
      } catch {
        return [];
      }
    },

    async destroyGroup(topic: string, group: string): Promise<void> {
      await send(cmd, ['XGROUP', 'DESTROY', streamPrefix + topic, group]).catch((err: unknown) => {
        log('debug', 'bus: group destroy failed', { topic, group, error: errorText(err) });
      });
      await cmd.busDropCounts([countsKey(streamPrefix + topic)], [group]).catch(() => undefined);
    },

    async setGroupPosition(topic: string, group: string, at: StartAt): Promise<void> {
      const id = at.at === 'end' ? '$' : at.at === 'beginning' ? '0' : at.id;
      await cmd.busSetId([streamPrefix + topic], [group, id]);
      await replicated(streamPrefix + topic);
    },
  };
}

/** A consumer's reads: new entries, its pending ones, and those it takes over from the dead. */
function readMethods(cmd: BusCommand): Pick<Bus, 'read' | 'claimFrom'> {
  return {
    async read(
      topic: string,
      group: string,
      consumer: string,
      opts: { cursor: string; count: number },
    ): Promise<GroupRead> {
      const key = streamPrefix + topic;
      try {
        const raw = await send(cmd, [
          'XREADGROUP',
          'GROUP',
          group,
          consumer,
          'COUNT',
          String(opts.count),
          'STREAMS',
          key,
          opts.cursor,
        ]);
        const entries = parseStreams(raw).get(key) ?? [];
        // An empty read of new entries means nothing is left: lag 0 without asking, which
        // keeps the idle polls of many exporters to one command each.
        if (entries.length === 0) return { entries, lag: opts.cursor === '>' ? 0 : undefined };
        const info = await send(cmd, ['XINFO', 'GROUPS', key]).catch(() => null);
        return { entries, lag: groupLag(info, group) };
      } catch (err) {
        throw translate(err);
      }
    },

    async claimFrom(topic, group, from, to, minIdleMs, count) {
      const key = streamPrefix + topic;
      try {
        const ids = pendingIds(
          await send(cmd, ['XPENDING', key, group, 'IDLE', String(minIdleMs), '-', '+', String(count), from]),
        );
        const entries =
          ids.length === 0
            ? []
            : parseEntries(await send(cmd, ['XCLAIM', key, group, to, String(minIdleMs), ...ids])).filter(
                (e) => Object.keys(e.fields).length > 0,
              );
        const left = pendingIds(await send(cmd, ['XPENDING', key, group, '-', '+', '1', from]));
        if (left.length > 0) return { entries, drained: false };
        await send(cmd, ['XGROUP', 'DELCONSUMER', key, group, from]);
        return { entries, drained: true };
      } catch (err) {
        throw translate(err);
      }
    },
  };
}

/** Heartbeats of consumers and who is dead (the takeover of their pending entries). */
function consumerMethods(
  cmd: BusCommand,
  cluster: boolean,
): Pick<Bus, 'heartbeat' | 'retire' | 'deadAmong' | 'deadConsumers'> {
  /** The consumers among `consumers` whose heartbeat key is gone (or names a process gone here). */
  async function deadAmong(consumers: readonly string[]): Promise<string[]> {
    if (consumers.length === 0) return [];
    // On Cluster each heartbeat key is its own slot: one GET each (node-redis pipelines them).
    const values: unknown[] = cluster
      ? await Promise.all(consumers.map((c) => send(cmd, ['GET', aliveKey(c)])))
      : ((v) => (Array.isArray(v) ? v : []))(await send(cmd, ['MGET', ...consumers.map(aliveKey)]));
    return consumers.filter((_c, i) => {
      const v: unknown = values[i];
      if (v === null || v === undefined) return true;
      return goneHere(asString(v));
    });
  }

  return {
    deadAmong,
    async heartbeat(consumer: string, ttlMs: number): Promise<void> {
      const me = JSON.stringify({ host: hostname(), pid: process.pid, seen: Date.now() });
      await Promise.all([
        send(cmd, ['SET', aliveKey(consumer), me, 'PX', String(ttlMs)]),
        send(cmd, ['HSET', consumersKey, consumer, me]),
      ]);
    },

    async retire(consumer: string): Promise<void> {
      await send(cmd, ['DEL', aliveKey(consumer)]);
    },

    async deadConsumers(): Promise<string[]> {
      const raw = await send(cmd, ['HGETALL', consumersKey]);
      const all = parsePairs(raw);
      const names: string[] = [];
      const forget: string[] = [];
      for (const [name, v] of Object.entries(all)) {
        const seen = Number((JSON.parse(asString(v) || '{}') as { seen?: unknown }).seen);
        if (Date.now() - seen > forgetDeadMs) forget.push(name);
        else names.push(name);
      }
      if (forget.length > 0) await send(cmd, ['HDEL', consumersKey, ...forget]);
      return deadAmong(names);
    },
  };
}

export async function openRedisBus(target: RedisTarget | string): Promise<Bus & { connectionNames(): string[] }> {
  const t = toTarget(target);
  const cmd = commandClient(t);
  await cmd.connect();
  // One blocking connection (standalone, Sentinel), or one per slot of watched streams (Cluster).
  const blocking = t.kind === 'cluster' ? undefined : redisClient(t, 'bus-notifier', { offlineQueue: true });
  await blocking?.connect();
  const notifier = blocking ? new Notifier(blocking, cmd) : new SlotNotifiers(t, cmd);
  const replicated = replicaConfirmation(cmd, t);
  const listTopics = () => scanTopics(cmd);
  const discovery = new Discovery(listTopics);

  return {
    kind: 'redis',
    connectionNames: () => [
      'edgeplane-bus-command',
      ...(notifier instanceof SlotNotifiers ? notifier.names() : ['edgeplane-bus-notifier']),
    ],
    listTopics,
    ...topicMethods(cmd, replicated),
    ...groupMethods(cmd, replicated),
    ...readMethods(cmd),
    ...consumerMethods(cmd, t.kind === 'cluster'),
    watch: (topic, wake) => notifier.watch(streamPrefix + topic, wake),
    onTopics: (listener) => discovery.onTopics(listener),

    async close(): Promise<void> {
      discovery.close();
      const stopping = notifier.close();
      if (blocking) void blocking.destroy();
      await stopping;
      await closeClients(cmd);
    },
  };
}
