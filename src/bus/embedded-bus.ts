/**
 * The bus without Redis (when REDIS_URL is not set: a first run on a laptop, unit tests): in-memory
 * streams with the Redis semantics the exporters rely on (groups, per-consumer pending
 * lists, ack, lag), persisted as an append-only JSON-lines file `bus.jsonl` under DATA_DIR
 * so entries and group positions survive a restart. Deliveries are logged too, so a
 * restart finds the same pending list Redis would. A large log is compacted at open.
 */
import { appendFileSync, existsSync, mkdirSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  BusError,
  compareIds,
  entryObject,
  noCounts,
  type AckCount,
  type Bus,
  type CountedOutcome,
  type OutcomeCounts,
  type GroupRead,
  type ProduceInput,
  type StartAt,
  type StreamEntry,
  type TopicInfo,
} from './bus.js';
import { Discovery } from './discovery.js';
import { log } from '../lib/log.js';
import { replayLines } from '../store/aof.js';

type Group = {
  lastDelivered: string;
  pending: Map<string, { consumer: string; since: number }>;
  /** Outcomes counted with the acks (Bus.ack) per counter name, kept in the same log record as the ack. */
  counts: Record<string, OutcomeCounts>;
};
type Stream = { entries: StreamEntry[]; lastId: string; groups: Map<string, Group> };

type Record_ =
  | { op: 'add'; topic: string; id: string; fields: Record<string, string> }
  | { op: 'group'; topic: string; group: string; last: string; counts?: Record<string, OutcomeCounts> }
  | { op: 'deliver'; topic: string; group: string; consumer: string; ids: string[] }
  | { op: 'ack'; topic: string; group: string; ids: string[]; as?: string; outcomes?: CountedOutcome[] }
  | { op: 'destroy'; topic: string; group: string }
  | { op: 'setid'; topic: string; group: string; last: string };

const ops = new Set(['add', 'group', 'deliver', 'ack', 'destroy', 'setid']);

/** One line of bus.jsonl, or undefined when it is not a record (a torn line). */
function parseRecord(line: string): Record_ | undefined {
  try {
    const r = JSON.parse(line) as Record_ | null;
    return r && typeof r === 'object' && ops.has(r.op) && typeof r.topic === 'string' ? r : undefined;
  } catch {
    return undefined;
  }
}

/** Index of the first entry with an ID greater than `id` (entries are sorted). */
function firstAfter(entries: StreamEntry[], id: string): number {
  let lo = 0;
  let hi = entries.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (compareIds(entries[mid]!.id, id) <= 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Rewrite the log when it is this large at open (default): acked deliveries and acks are dropped. */
const defaultCompactMinBytes = 8 * 1024 * 1024;

/** The live state as a fresh log (entries, groups, pending deliveries), swapped in atomically. */
function compact(file: string, streams: Map<string, Stream>): void {
  const lines: string[] = [];
  for (const [topic, s] of streams) {
    for (const e of s.entries) lines.push(JSON.stringify({ op: 'add', topic, id: e.id, fields: e.fields }));
    for (const [group, g] of s.groups) {
      lines.push(JSON.stringify({ op: 'group', topic, group, last: g.lastDelivered, counts: g.counts }));
      const byConsumer = new Map<string, string[]>();
      for (const [id, p] of g.pending) byConsumer.set(p.consumer, [...(byConsumer.get(p.consumer) ?? []), id]);
      for (const [consumer, ids] of byConsumer)
        lines.push(JSON.stringify({ op: 'deliver', topic, group, consumer, ids }));
    }
  }
  const tmp = `${file}.tmp`;
  writeFileSync(tmp, lines.length ? lines.join('\n') + '\n' : '');
  renameSync(tmp, file);
}

export function openEmbeddedBus(dataDir: string | undefined, opts: { compactMinBytes?: number } = {}): Bus {
  const streams = new Map<string, Stream>();
  const watchers = new Map<string, Set<() => void>>();
  const alive = new Set<string>();
  /** rate-limit token buckets (in memory: one process per DATA_DIR). */
  const buckets = new Map<string, { tokens: number; ts: number }>();
  const file = dataDir ? join(dataDir, 'bus.jsonl') : undefined;

  const stream = (topic: string): Stream => {
    let s = streams.get(topic);
    if (!s) {
      s = { entries: [], lastId: '0-0', groups: new Map() };
      streams.set(topic, s);
    }
    return s;
  };

  const apply = (r: Record_): void => {
    const s = stream(r.topic);
    switch (r.op) {
      case 'add':
        s.entries.push({ id: r.id, fields: r.fields });
        s.lastId = r.id;
        break;
      case 'group':
        if (!s.groups.has(r.group))
          s.groups.set(r.group, { lastDelivered: r.last, pending: new Map(), counts: { ...r.counts } });
        break;
      case 'deliver': {
        const g = s.groups.get(r.group);
        if (!g) break;
        for (const id of r.ids) {
          g.pending.set(id, { consumer: r.consumer, since: Date.now() });
          if (compareIds(id, g.lastDelivered) > 0) g.lastDelivered = id;
        }
        break;
      }
      case 'ack': {
        const g = s.groups.get(r.group);
        if (g)
          r.ids.forEach((id, i) => {
            const outcome = r.outcomes?.[i];
            if (!g.pending.delete(id) || outcome === undefined || r.as === undefined) return;
            const c = (g.counts[r.as] ??= noCounts());
            if (outcome in c) c[outcome]++;
          });
        break;
      }
      case 'destroy':
        s.groups.delete(r.group);
        break;
      case 'setid': {
        // Rewind: the new position, and no pending entries (acked, as Redis's script does).
        // The counters go on.
        s.groups.set(r.group, {
          lastDelivered: r.last,
          pending: new Map(),
          counts: s.groups.get(r.group)?.counts ?? {},
        });
        break;
      }
    }
  };

  if (file) {
    mkdirSync(dataDir!, { recursive: true });
    const loaded = replayLines(file, parseRecord);
    for (const r of loaded.records) apply(r);
    if (loaded.tornBytes > 0)
      log('warn', 'embedded bus: dropped a torn last record', { path: file, bytes: loaded.tornBytes });
  }

  if (file && existsSync(file) && statSync(file).size > (opts.compactMinBytes ?? defaultCompactMinBytes))
    compact(file, streams);

  const record = (r: Record_): void => {
    apply(r);
    if (file) appendFileSync(file, JSON.stringify(r) + '\n');
  };

  const discovery = new Discovery(async () => [...streams.keys()].sort());

  const nextId = (s: Stream): string => {
    const now = Date.now();
    const [lastMs, lastSeq] = s.lastId.split('-').map(Number) as [number, number];
    return now > lastMs ? `${now}-0` : `${lastMs}-${lastSeq + 1}`;
  };

  const group = (topic: string, name: string): Group => {
    const g = streams.get(topic)?.groups.get(name);
    if (!g) throw new BusError('no-group', `NOGROUP no group ${name} on topic ${topic}`);
    return g;
  };

  return {
    kind: 'embedded',

    async produce(topic: string, msg: ProduceInput): Promise<string> {
      const isNew = !streams.has(topic);
      const s = stream(topic);
      const fields: Record<string, string> = {};
      for (const [k, v] of Object.entries(msg)) if (typeof v === 'string') fields[k] = v;
      const id = nextId(s);
      record({ op: 'add', topic, id, fields });
      for (const wake of watchers.get(topic) ?? []) queueMicrotask(wake);
      if (isNew) void discovery.poll();
      return id;
    },

    listTopics: async () => [...streams.keys()].sort(),

    async topicInfo(topic: string): Promise<TopicInfo | undefined> {
      const s = streams.get(topic);
      if (!s) return undefined;
      const last = s.entries[s.entries.length - 1];
      return {
        name: topic,
        length: s.entries.length,
        'last-entry-id': last?.id ?? null,
        'last-entry': last ? entryObject(last) : null,
      };
    },

    async ensureGroup(topic: string, name: string, start: StartAt): Promise<void> {
      const s = stream(topic);
      if (s.groups.has(name)) return;
      const last = start.at === 'end' ? s.lastId : start.at === 'beginning' ? '0-0' : start.id;
      record({ op: 'group', topic, group: name, last });
    },

    async read(
      topic: string,
      name: string,
      consumer: string,
      opts: { cursor: string; count: number },
    ): Promise<GroupRead> {
      const s = stream(topic);
      const g = group(topic, name);
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
      if (entries.length > 0) record({ op: 'deliver', topic, group: name, consumer, ids: entries.map((e) => e.id) });
      return { entries, lag: s.entries.length - from - entries.length };
    },

    async ack(
      topic: string,
      name: string,
      ids: readonly string[],
      count?: AckCount,
    ): Promise<OutcomeCounts | undefined> {
      const g = streams.get(topic)?.groups.get(name);
      if (ids.length > 0 && g)
        record({
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

    async rateToken(name: string, site: string, perSecond: number, burst: number): Promise<number> {
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
    },

    async counts(topic: string, as: string): Promise<OutcomeCounts> {
      const group = as.slice(0, as.indexOf('|') >>> 0);
      return { ...(streams.get(topic)?.groups.get(group)?.counts[as] ?? noCounts()) };
    },

    async backlog(topic: string, name: string): Promise<number | undefined> {
      const s = streams.get(topic);
      const g = s?.groups.get(name);
      if (!s || !g) return undefined;
      return s.entries.length - firstAfter(s.entries, g.lastDelivered) + g.pending.size;
    },

    // One process per DATA_DIR: a consumer is alive when this process gave it a heartbeat.
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
      for (const s of streams.values())
        for (const g of s.groups.values()) for (const p of g.pending.values()) seen.add(p.consumer);
      return [...seen].filter((c) => !alive.has(c));
    },

    async groupConsumers(topic: string, name: string): Promise<string[]> {
      const g = streams.get(topic)?.groups.get(name);
      return g ? [...new Set([...g.pending.values()].map((p) => p.consumer))] : [];
    },

    async claimFrom(topic, name, from, to, minIdleMs, count) {
      const s = stream(topic);
      const g = group(topic, name);
      const now = Date.now();
      const mine = [...g.pending.entries()].filter(([, p]) => p.consumer === from);
      const ids = mine
        .filter(([, p]) => now - p.since >= minIdleMs)
        .map(([id]) => id)
        .sort(compareIds)
        .slice(0, count);
      if (ids.length > 0) record({ op: 'deliver', topic, group: name, consumer: to, ids });
      const entries = ids
        .map((id) => s.entries[firstAfter(s.entries, id) - 1])
        .filter((e): e is StreamEntry => e !== undefined && ids.includes(e.id));
      return { entries, drained: mine.length === ids.length };
    },

    async destroyGroup(topic: string, name: string): Promise<void> {
      if (streams.get(topic)?.groups.has(name)) record({ op: 'destroy', topic, group: name });
    },

    async setGroupPosition(topic: string, name: string, at: StartAt): Promise<void> {
      const s = stream(topic);
      const last = at.at === 'end' ? s.lastId : at.at === 'beginning' ? '0-0' : at.id;
      record({ op: 'setid', topic, group: name, last });
    },

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

    onTopics: (listener) => discovery.onTopics(listener),

    async close(): Promise<void> {
      discovery.close();
      watchers.clear();
    },
  };
}
