/**
 * Narrowing of raw RESP2 replies (from `sendCommand`) for the stream commands the bus
 * uses. Raw commands keep us independent of node-redis's per-command reply mapping.
 */
import type { StreamEntry } from './bus.js';

function str(v: unknown): string {
  if (typeof v === 'string') return v;
  if (Buffer.isBuffer(v)) return v.toString('utf8');
  if (typeof v === 'number') return String(v);
  return '';
}

/** [id, [field, value, ...]] → entry; entries deleted while pending come back with null fields. */
export function parseEntry(raw: unknown): StreamEntry | undefined {
  if (!Array.isArray(raw) || raw.length < 2) return undefined;
  const id = str(raw[0]);
  const fields: Record<string, string> = {};
  const flat: unknown = raw[1];
  if (Array.isArray(flat)) {
    for (let i = 0; i + 1 < flat.length; i += 2) fields[str(flat[i])] = str(flat[i + 1]);
  }
  return { id, fields };
}

export function parseEntries(raw: unknown): StreamEntry[] {
  if (!Array.isArray(raw)) return [];
  const out: StreamEntry[] = [];
  for (const e of raw) {
    const entry = parseEntry(e);
    if (entry) out.push(entry);
  }
  return out;
}

/** XREAD / XREADGROUP: [[key, entries], ...] or null → Map key → entries. */
export function parseStreams(raw: unknown): Map<string, StreamEntry[]> {
  const out = new Map<string, StreamEntry[]>();
  if (!Array.isArray(raw)) return out;
  for (const s of raw) {
    if (Array.isArray(s) && s.length >= 2) out.set(str(s[0]), parseEntries(s[1]));
  }
  return out;
}

/** Flat [k, v, k, v] reply → record (XINFO GROUPS items, XINFO STREAM). */
export function parsePairs(raw: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (!Array.isArray(raw)) return out;
  for (let i = 0; i + 1 < raw.length; i += 2) out[str(raw[i])] = raw[i + 1];
  return out;
}

/** The `lag` of one group from XINFO GROUPS; undefined when Redis cannot tell (after XDEL/trim). */
export function groupLag(raw: unknown, group: string): number | undefined {
  if (!Array.isArray(raw)) return undefined;
  for (const g of raw) {
    const info = parsePairs(g);
    if (str(info.name) !== group) continue;
    const lag = info.lag;
    return typeof lag === 'number' ? lag : undefined;
  }
  return undefined;
}

/** XINFO GROUPS → the group's backlog: `lag` (not yet read) plus `pending` (read, not acked). */
export function groupBacklog(raw: unknown, group: string): number | undefined {
  if (!Array.isArray(raw)) return undefined;
  for (const g of raw) {
    const info = parsePairs(g);
    if (str(info.name) !== group) continue;
    const { lag, pending } = info;
    return typeof lag === 'number' && typeof pending === 'number' ? lag + pending : undefined;
  }
  return undefined;
}

export function asString(v: unknown): string {
  return str(v);
}

/** XINFO CONSUMERS → the consumer names of a group. */
export function consumerNames(raw: unknown): string[] {
  if (!Array.isArray(raw)) return [];
  return raw.map((c) => str(parsePairs(c).name)).filter((n) => n !== '');
}

/** XPENDING (extended form) → the IDs: [[id, consumer, idle, deliveries], ...]. */
export function pendingIds(raw: unknown): string[] {
  if (!Array.isArray(raw)) return [];
  return raw.filter(Array.isArray).map((p: unknown[]) => str(p[0]));
}
