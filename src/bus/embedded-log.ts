/**
 * The embedded bus's state and its log: in-memory streams with their consumer groups
 * (position, per-consumer pending lists, counted outcomes), and the append-only JSON-lines
 * file `bus.jsonl` under DATA_DIR that rebuilds them at open. Every change goes through
 * `record`: applied in memory, then appended. A large log is compacted at open.
 */
import {
  appendFileSync,
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  renameSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { BusError, compareIds, noCounts, type CountedOutcome, type OutcomeCounts, type StreamEntry } from './bus.js';
import { log } from '../lib/log.js';
import { replayLines } from '../store/aof.js';
export type Group = {
  lastDelivered: string;
  pending: Map<string, { consumer: string; since: number }>;
  /** Outcomes counted with the acks (Bus.ack) per counter name, kept in the same log record as the ack. */
  counts: Record<string, OutcomeCounts>;
};
export type Stream = { entries: StreamEntry[]; lastId: string; groups: Map<string, Group> };

export type Record_ =
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
export function firstAfter(entries: StreamEntry[], id: string): number {
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
  writeFileSync(tmp, lines.length ? lines.join('\n') + '\n' : '', { mode: 0o600 });
  renameSync(tmp, file);
}

/** One record applied to its stream (made when new). */
function applyRecord(s: Stream, r: Record_): void {
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
}

export type StreamLog = {
  readonly streams: Map<string, Stream>;
  /** The stream of `topic`, made empty when new. */
  stream(topic: string): Stream;
  /** The group `name` on `topic`; a BusError `no-group` when there is none. */
  group(topic: string, name: string): Group;
  /** Applies one change and appends it to the log. */
  record(r: Record_): void;
  /** Closes the log's file (a change recorded after appends to it by name, as before it was opened). */
  close(): void;
};

/** The streams of `dataDir`'s log (in memory only without a DATA_DIR), replayed and compacted at open. */
export function openStreamLog(dataDir: string | undefined, opts: { compactMinBytes?: number } = {}): StreamLog {
  const streams = new Map<string, Stream>();
  const file = dataDir ? join(dataDir, 'bus.jsonl') : undefined;
  const stream = (topic: string): Stream => {
    let s = streams.get(topic);
    if (!s) {
      s = { entries: [], lastId: '0-0', groups: new Map() };
      streams.set(topic, s);
    }
    return s;
  };
  if (file) {
    mkdirSync(dataDir!, { recursive: true, mode: 0o700 });
    const loaded = replayLines(file, parseRecord);
    for (const r of loaded.records) applyRecord(stream(r.topic), r);
    if (loaded.tornBytes > 0)
      log('warn', 'embedded bus: dropped a torn last record', { path: file, bytes: loaded.tornBytes });
    if (existsSync(file) && statSync(file).size > (opts.compactMinBytes ?? defaultCompactMinBytes))
      compact(file, streams);
  }
  // Kept open (an append per message and per delivery: opening the file for each cost more than the write).
  let fd = file ? openSync(file, 'a', 0o600) : undefined;
  return {
    streams,
    stream,
    group(topic, name) {
      const g = streams.get(topic)?.groups.get(name);
      if (!g) throw new BusError('no-group', `NOGROUP no group ${name} on topic ${topic}`);
      return g;
    },
    record(r) {
      applyRecord(stream(r.topic), r);
      if (fd !== undefined) writeSync(fd, JSON.stringify(r) + '\n');
      else if (file) appendFileSync(file, JSON.stringify(r) + '\n', { mode: 0o600 });
    },
    close() {
      if (fd === undefined) return;
      closeSync(fd);
      fd = undefined;
    },
  };
}
