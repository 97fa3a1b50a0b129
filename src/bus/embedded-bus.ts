/**
 * The bus without Redis (when REDIS_URL is not set: a first run on a laptop, unit tests): in-memory
 * streams with the Redis semantics the exporters rely on (groups, per-consumer pending
 * lists, ack, lag), persisted as an append-only JSON-lines file `bus.jsonl` under DATA_DIR
 * (`embedded-log.ts`) so entries and group positions survive a restart. Deliveries are logged
 * too, so a restart finds the same pending list Redis would.
 */
import {
  BusError,
  compareIds,
  entryObject,
  idMs,
  noCounts,
  type AckCount,
  type Bus,
  type OutcomeCounts,
  type GroupRead,
  type ProduceInput,
  type GroupStart,
  type StartAt,
  type StreamEntry,
  type TopicInfo,
} from './bus.js';
import { Discovery } from './discovery.js';
import { firstAfter, openStreamLog, type Stream, type StreamLog } from './embedded-log.js';

export function openEmbeddedBus(dataDir: string | undefined, opts: { compactMinBytes?: number } = {}): Bus {
  const log = openStreamLog(dataDir, opts);
  const discovery = new Discovery(async () => [...log.streams.keys()].sort());
  const wakes = topicWakes();
  return {
    kind: 'embedded',
    ...topicOps(log, discovery, wakes.wakeAll),
    ...groupOps(log),
    ...consumerOps(log),
    rateToken: tokenBuckets(),
    watch: wakes.watch,
    onTopics: (listener) => discovery.onTopics(listener),
    async close(): Promise<void> {
      discovery.close();
      wakes.clear();
      log.close();
    },
  };
}

const nextId = (s: Stream): string => {
  const now = Date.now();
  const [lastMs, lastSeq] = s.lastId.split('-').map(Number) as [number, number];
  return now > lastMs ? `${now}-0` : `${lastMs}-${lastSeq + 1}`;
};

/** Producing and reading topics as a whole. */
function topicOps(
  log: StreamLog,
  discovery: Discovery,
  wakeAll: (topic: string) => void,
): Pick<Bus, 'produce' | 'listTopics' | 'topicInfo'> {
  return {
    async produce(topic: string, msg: ProduceInput): Promise<string> {
      const isNew = !log.streams.has(topic);
      const s = log.stream(topic);
      const fields: Record<string, string> = {};
      for (const [k, v] of Object.entries(msg)) if (typeof v === 'string') fields[k] = v;
      const id = nextId(s);
      log.record({ op: 'add', topic, id, fields });
      wakeAll(topic);
      if (isNew) void discovery.poll();
      return id;
    },

    listTopics: async () => [...log.streams.keys()].sort(),

    async topicInfo(topic: string): Promise<TopicInfo | undefined> {
      const s = log.streams.get(topic);
      if (!s) return undefined;
      const last = s.entries[s.entries.length - 1];
      return {
        name: topic,
        length: s.entries.length,
        'last-entry-id': last?.id ?? null,
        'last-entry': last ? entryObject(last) : null,
      };
    },
  };
}

/** The ID a new group of stream `s` starts after (GroupStart, as the Redis bus makes it). */
function startId(s: Stream, start: GroupStart): string {
  if (start.at === 'end') return s.lastId;
  if (start.at === 'beginning') return '0-0';
  if (start.at === 'after') return start.id;
  const first = s.entries[0];
  if (!first || idMs(first.id) >= start.ms) return '0-0';
  // After the last entry older than `since` (the entries are in ID order).
  let at = first.id;
  for (const e of s.entries) {
    if (idMs(e.id) >= start.ms) break;
    at = e.id;
  }
  return at;
}

/** A consumer group's life: made, read, acked with its counted outcomes, claimed, moved, destroyed. */
function groupOps(
  log: StreamLog,
): Pick<
  Bus,
  'ensureGroup' | 'read' | 'ack' | 'counts' | 'backlog' | 'claimFrom' | 'destroyGroup' | 'setGroupPosition'
> {
  return {
    async ensureGroup(topic: string, name: string, start: GroupStart): Promise<void> {
      const s = log.stream(topic);
      if (s.groups.has(name)) return;
      log.record({ op: 'group', topic, group: name, last: startId(s, start) });
    },

    async read(
      topic: string,
      name: string,
      consumer: string,
      opts: { cursor: string; count: number },
    ): Promise<GroupRead> {
      const s = log.stream(topic);
      const g = log.group(topic, name);
      if (opts.cursor !== '>') {
        const mine = [...g.pending.entries()]
          .filter(([id, p]) => p.consumer === consumer && compareIds(id, opts.cursor) > 0)
          .map(([id]) => id)
          .sort(compareIds)
          .slice(0, opts.count);
        const entries = mine
          .map((id) => s.entries[firstAfter(s.entries, id) - 1])
          .filter((e): e is StreamEntry => e !== undefined && mine.includes(e.id));
        return { entries, lag: s.entries.length - firstAfter(s.entries, g.lastDelivered) };
      }
      const from = firstAfter(s.entries, g.lastDelivered);
      const entries = s.entries.slice(from, from + opts.count);
      if (entries.length > 0)
        log.record({ op: 'deliver', topic, group: name, consumer, ids: entries.map((e) => e.id) });
      return { entries, lag: s.entries.length - from - entries.length };
    },

    async ack(
      topic: string,
      name: string,
      ids: readonly string[],
      count?: AckCount,
    ): Promise<OutcomeCounts | undefined> {
      const g = log.streams.get(topic)?.groups.get(name);
      if (ids.length > 0 && g)
        log.record({
          op: 'ack',
          topic,
          group: name,
          ids: [...ids],
          ...(count ? { as: count.as, outcomes: [...count.outcomes] } : {}),
        });
      if (!count) return undefined;
      if (!g) throw new BusError('no-group', `NOGROUP no group ${name} on topic ${topic}`);
      return { ...(g.counts[count.as] ?? noCounts()) };
    },

    async counts(topic: string, as: string): Promise<OutcomeCounts> {
      const group = as.slice(0, as.indexOf('|') >>> 0);
      return { ...(log.streams.get(topic)?.groups.get(group)?.counts[as] ?? noCounts()) };
    },

    async backlog(topic: string, name: string): Promise<number | undefined> {
      const s = log.streams.get(topic);
      const g = s?.groups.get(name);
      if (!s || !g) return undefined;
      return s.entries.length - firstAfter(s.entries, g.lastDelivered) + g.pending.size;
    },

    async claimFrom(topic, name, from, to, minIdleMs, count) {
      const s = log.stream(topic);
      const g = log.group(topic, name);
      const now = Date.now();
      const mine = [...g.pending.entries()].filter(([, p]) => p.consumer === from);
      const ids = mine
        .filter(([, p]) => now - p.since >= minIdleMs)
        .map(([id]) => id)
        .sort(compareIds)
        .slice(0, count);
      if (ids.length > 0) log.record({ op: 'deliver', topic, group: name, consumer: to, ids });
      const entries = ids
        .map((id) => s.entries[firstAfter(s.entries, id) - 1])
        .filter((e): e is StreamEntry => e !== undefined && ids.includes(e.id));
      return { entries, drained: mine.length === ids.length };
    },

    async destroyGroup(topic: string, name: string): Promise<void> {
      if (log.streams.get(topic)?.groups.has(name)) log.record({ op: 'destroy', topic, group: name });
    },

    async setGroupPosition(topic: string, name: string, at: StartAt): Promise<void> {
      const s = log.stream(topic);
      const last = at.at === 'end' ? s.lastId : at.at === 'beginning' ? '0-0' : at.id;
      log.record({ op: 'setid', topic, group: name, last });
    },
  };
}

/** Which consumers are alive: one process per DATA_DIR, so a consumer is alive when this process gave it a heartbeat. */
function consumerOps(
  log: StreamLog,
): Pick<Bus, 'heartbeat' | 'retire' | 'deadAmong' | 'deadConsumers' | 'groupConsumers'> {
  const alive = new Set<string>();
  return {
    async heartbeat(consumer: string): Promise<void> {
      alive.add(consumer);
    },

    async retire(consumer: string): Promise<void> {
      alive.delete(consumer);
    },

    async deadAmong(consumers: readonly string[]): Promise<string[]> {
      return consumers.filter((c) => !alive.has(c));
    },

    async deadConsumers(): Promise<string[]> {
      const seen = new Set<string>();
      for (const s of log.streams.values())
        for (const g of s.groups.values()) for (const p of g.pending.values()) seen.add(p.consumer);
      return [...seen].filter((c) => !alive.has(c));
    },

    async groupConsumers(topic: string, name: string): Promise<string[]> {
      const g = log.streams.get(topic)?.groups.get(name);
      return g ? [...new Set([...g.pending.values()].map((p) => p.consumer))] : [];
    },
  };
}

/** Rate-limit token buckets (in memory: one process per DATA_DIR). */
function tokenBuckets(): Bus['rateToken'] {
  const buckets = new Map<string, { tokens: number; ts: number }>();
  return async (name: string, site: string, perSecond: number, burst: number): Promise<number> => {
    const key = `${site}:${name}`;
    const now = Date.now();
    const b = buckets.get(key) ?? { tokens: burst, ts: now };
    b.tokens = Math.min(burst, b.tokens + (Math.max(0, now - b.ts) * perSecond) / 1000);
    b.ts = now;
    buckets.set(key, b);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return Math.ceil(((1 - b.tokens) * 1000) / perSecond);
  };
}

/** Who waits for new entries on a topic. */
function topicWakes() {
  const watchers = new Map<string, Set<() => void>>();
  return {
    watch(topic: string, wake: () => void): () => void {
      let set = watchers.get(topic);
      if (!set) {
        set = new Set();
        watchers.set(topic, set);
      }
      set.add(wake);
      // Like the Redis notifier: one wake at registration, so nothing before it is missed.
      queueMicrotask(wake);
      return () => {
        set.delete(wake);
      };
    },
    wakeAll(topic: string): void {
      for (const wake of watchers.get(topic) ?? []) queueMicrotask(wake);
    },
    clear: () => watchers.clear(),
  };
}
