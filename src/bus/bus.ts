/**
 * The message bus: topic T is the stream `volga:T`, one message per entry.
 * Consumer positions are consumer groups named after the exporter, so
 * `redis-cli XINFO GROUPS volga:T` shows them. Two backends: redis-bus.ts (production)
 * and embedded-bus.ts (in-process, persisted under DATA_DIR) with the same semantics.
 *
 * Offsets: an entry read through a group stays in the consumer's pending list until it is
 * acked. Exporters ack each message once it is delivered, dropped or ignored, and on start
 * read their own pending list first, so "the offset only moves past a message once it and
 * every earlier one are handled" holds: the first unacked entry is the resume point.
 */
import type { JsonObject } from '../lib/json.js';

export const streamPrefix = 'volga:';

export type StreamEntry = { id: string; fields: Record<string, string> };

export type ProduceInput = {
  payload: string;
  'producer-name'?: string;
  host?: string;
  origin?: string;
  time?: string;
  /** Other fields of the entry (dead-letter entries carry topic, seqno, reason…). */
  [field: string]: string | undefined;
};

export type TopicInfo = {
  name: string;
  length: number;
  'last-entry-id': string | null;
  'last-entry': JsonObject | null;
};

/** Where a new group starts: after the current last entry, at the oldest, or after an ID. */
export type StartAt = { at: 'end' } | { at: 'beginning' } | { at: 'after'; id: string };

/**
 * Where a group made by ensureGroup starts: a StartAt, or `since` a time (ms): at the oldest
 * entry when that entry is no older (a topic made since then is read whole), else after the
 * last entry older than that time (what was produced since is read).
 */
export type GroupStart = StartAt | { at: 'since'; ms: number };

/** The millisecond part of a stream entry ID. */
export const idMs = (id: string): number => Number(id.slice(0, id.indexOf('-')));

/**
 * `cursor` '>' reads entries never delivered to the group; an ID reads this consumer's own
 * pending entries after that ID (use '0' to start). `lag`: entries not yet delivered to the
 * group after the read (undefined when the backend cannot tell).
 */
export type GroupRead = { entries: StreamEntry[]; lag: number | undefined };

/**
 * The outcomes an exporter counts when it acknowledges a message. Counted by the bus in the
 * same atomic step as the XACK, and only for entries that step acknowledged, so the counters
 * stay exact across a kill -9 (a message re-sent after a crash is acknowledged, and counted,
 * once). They are kept per counter name `as` (an exporter's group and its site: sites that
 * share one Redis keep their own counts). Redis keeps them in the hash
 * `edgeplane:counts:{volga:T}` (fields `<as>|<outcome>`): its hash tag is the stream's key, so
 * both live in one hash slot of a Redis Cluster.
 */
export const countedOutcomes = ['delivered', 'dropped', 'ignored', 'filtered'] as const;
export type CountedOutcome = (typeof countedOutcomes)[number];
export type OutcomeCounts = Record<CountedOutcome, number>;

export const noCounts = (): OutcomeCounts => ({ delivered: 0, dropped: 0, ignored: 0, filtered: 0 });

/**
 * What `Bus.ack` counts: one outcome per acknowledged id, under the counter name `as` (it starts
 * with `<group>|`). `totals: false`: the totals need not come back (Redis then skips reading
 * and sending them; the ack may return undefined).
 */
export type AckCount = { as: string; outcomes: readonly CountedOutcome[]; totals?: boolean };

/** Stable failure codes callers match on. */
export type BusErrorCode = 'no-group' | 'unavailable';

export class BusError extends Error {
  readonly code: BusErrorCode;
  constructor(code: BusErrorCode, message: string) {
    super(message);
    this.name = 'BusError';
    this.code = code;
  }
}

export interface Bus {
  readonly kind: 'redis' | 'embedded';
  produce(topic: string, msg: ProduceInput): Promise<string>;
  listTopics(): Promise<string[]>;
  topicInfo(topic: string): Promise<TopicInfo | undefined>;
  /** Creates the group (and the stream) unless it exists; an existing group keeps its position. */
  ensureGroup(topic: string, group: string, start: GroupStart): Promise<void>;
  read(topic: string, group: string, consumer: string, opts: { cursor: string; count: number }): Promise<GroupRead>;
  /**
   * Acknowledges entries. With `count`, counts each entry this call really acknowledged
   * under its outcome, atomically with the ack, and returns the totals of `count.as` on this
   * topic after it (unless `count.totals` is false: then maybe undefined).
   */
  ack(topic: string, group: string, ids: readonly string[], count?: AckCount): Promise<OutcomeCounts | undefined>;
  /**
   * `rate-limit` (CONTRACT §12): takes one token of the bucket `name` (an exporter's name, of
   * the tenant like a topic name) at `site`, refilled at `perSecond` up to `burst`; returns 0
   * when taken, else the milliseconds until one is there. Redis: one Lua script on the hash
   * `edgeplane:rate:<site>:<name>` with the server's clock, so every process of the site shares
   * it; the embedded bus keeps it in memory.
   */
  rateToken(name: string, site: string, perSecond: number, burst: number): Promise<number>;
  /** The counted outcomes of counter name `as` on the topic (all 0 when none). */
  counts(topic: string, as: string): Promise<OutcomeCounts>;
  /**
   * Consumers and their liveness. Every process reads as its own consumer and calls
   * `heartbeat` about every second; a consumer is dead when its last heartbeat is older than
   * its ttl, when it was retired (a graceful stop), or when it names a process of this host
   * that is gone. The pending entries of dead consumers are taken over with `claimFrom`.
   */
  heartbeat(consumer: string, ttlMs: number): Promise<void>;
  retire(consumer: string): Promise<void>;
  /** Those of `consumers` that are dead (unknown names, e.g. of older versions, are dead). */
  deadAmong(consumers: readonly string[]): Promise<string[]>;
  /** Consumers that sent heartbeats and are dead now (forgotten an hour after the last one). */
  deadConsumers(): Promise<string[]>;
  /** The consumer names of a group ([] when it does not exist). */
  groupConsumers(topic: string, group: string): Promise<string[]>;
  /**
   * Moves up to `count` entries pending for `from` longer than `minIdleMs` to `to` and returns
   * them; `drained` when `from` has nothing pending left in the group (it is then removed).
   */
  claimFrom(
    topic: string,
    group: string,
    from: string,
    to: string,
    minIdleMs: number,
    count: number,
  ): Promise<{ entries: StreamEntry[]; drained: boolean }>;
  /**
   * Entries of the topic the group has not fully handled: not yet read plus read but not
   * acknowledged (Redis: XINFO GROUPS `lag` + `pending`). Undefined when unknown (no group,
   * or Redis cannot count the lag after deletions).
   */
  backlog(topic: string, group: string): Promise<number | undefined>;
  /** Destroys the group and its counts (every counter name starting with `<group>|`). */
  destroyGroup(topic: string, group: string): Promise<void>;
  /**
   * Rewind: moves the group so its next new entry is the first after `at` (XGROUP SETID on
   * Redis), creating the group when missing, and acks its pending entries so they are not
   * read again from the pending list (entries after `at` are read again as new ones).
   */
  setGroupPosition(topic: string, group: string, at: StartAt): Promise<void>;
  /** `wake` is called when the topic may have new entries (never for each entry). */
  watch(topic: string, wake: () => void): () => void;
  /** Called with every existing topic name, now and whenever the set changes (~1.5 s). */
  onTopics(listener: (topics: ReadonlySet<string>) => void): () => void;
  close(): Promise<void>;
}

/** Milliseconds and sequence of an entry ID, for ordering IDs without string tricks. */
export function parseId(id: string): [number, number] {
  const dash = id.indexOf('-');
  if (dash < 0) return [Number(id), 0];
  return [Number(id.slice(0, dash)), Number(id.slice(dash + 1))];
}

/** The greatest entry ID before `id` ('0' when none): a group set there reads `id` next. */
export function idBefore(id: string): string {
  const [ms, seq] = parseId(id);
  if (seq > 0) return `${ms}-${seq - 1}`;
  return ms > 0 ? `${ms - 1}-18446744073709551615` : '0';
}

export function compareIds(a: string, b: string): number {
  const [am, as] = parseId(a);
  const [bm, bs] = parseId(b);
  return am !== bm ? am - bm : as - bs;
}

/** The entry as the topic-state API shows it. */
export function entryObject(entry: StreamEntry): JsonObject {
  return { id: entry.id, ...entry.fields };
}

export function produceFields(msg: ProduceInput): string[] {
  const out = ['payload', msg.payload];
  for (const k of ['producer-name', 'host', 'origin', 'time'] as const) {
    const v = msg[k];
    if (v !== undefined) out.push(k, v);
  }
  // Further fields (a dead-letter entry's topic, seqno, reason…) follow in the given order.
  for (const [k, v] of Object.entries(msg))
    if (typeof v === 'string' && k !== 'payload' && !(k in fixedFields)) out.push(k, v);
  return out;
}

const fixedFields = { 'producer-name': 1, host: 1, origin: 1, time: 1 };
