/**
 * The rewind operation: `{"to": "beginning" | "end" | "<seqno>" | "<ISO time>"}` moves the
 * exporter's consumer group on every topic it consumes. A seqno or time is inclusive: the
 * next message sent is the first whose seqno is at least that seqno (or whose entry time,
 * the millisecond part of its seqno, is at or after that time). Pending entries are acked,
 * so the exporter goes on exactly from the new position.
 */
import { idBefore, type Bus, type StartAt } from '../bus/bus.js';
import { ApiError } from '../lib/errors.js';
import type { JsonObject } from '../lib/json.js';
import { compileSpec } from '../resources/webhook/spec.js';

const isoTime = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

const maxU64 = 2n ** 64n - 1n;

/** True when the date `text` starts with (YYYY-MM-DD) is a day of the calendar (not 2026-02-30). */
function realDay(text: string): boolean {
  const [y, m, d] = [Number(text.slice(0, 4)), Number(text.slice(5, 7)), Number(text.slice(8, 10))];
  return m >= 1 && m <= 12 && d >= 1 && d <= new Date(Date.UTC(y, m, 0)).getUTCDate();
}

export function parseRewindTo(body: unknown): StartAt {
  const to = typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as JsonObject).to : undefined;
  const bad = (why: string) =>
    new ApiError('invalid-value', `Cannot rewind to ${JSON.stringify(to ?? null)}: ${why}`, {
      code: 'invalid-rewind',
      path: 'to',
    });
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw bad('send an object {"to": …}');
  for (const k of Object.keys(body))
    if (k !== 'to')
      throw new ApiError('invalid-value', `Cannot rewind with field ${k}: only to is accepted`, {
        code: 'unknown-field',
        path: k,
      });
  if (typeof to !== 'string' || to === '')
    throw bad('to must be "beginning", "end", a seqno such as 1732230000000-0, or an ISO 8601 time');
  if (to === 'beginning') return { at: 'beginning' };
  if (to === 'end') return { at: 'end' };
  if (/^\d{1,20}(-\d{1,20})?$/.test(to)) {
    // Each part of a stream id is an unsigned 64-bit number.
    if (to.split('-').some((part) => BigInt(part) > maxU64)) throw bad('each part of a seqno is at most 2^64 - 1');
    return { at: 'after', id: idBefore(to.includes('-') ? to : `${to}-0`) };
  }
  if (isoTime.test(to)) {
    const ms = Date.parse(to);
    // Date.parse rolls a day past the month's end over (2026-02-30 is March 2): refused instead.
    if (!realDay(to)) throw bad(`${to.slice(0, 10)} is not a day of the calendar`);
    if (!Number.isNaN(ms) && ms >= 0) return { at: 'after', id: idBefore(`${ms}-0`) };
  }
  throw bad('to must be "beginning", "end", a seqno such as 1732230000000-0, or an ISO 8601 time');
}

/** The topics an exporter consumes: its named topics and the bus topics its patterns match. */
export async function consumedTopics(bus: Bus, tenant: string, cfg: JsonObject, rootTenant: string): Promise<string[]> {
  let spec;
  try {
    spec = compileSpec(tenant, cfg, rootTenant);
  } catch {
    return [...new Set([...(Array.isArray(cfg.topics) ? cfg.topics : []), cfg.topic])].filter(
      (t): t is string => typeof t === 'string',
    );
  }
  const topics = new Set(spec.topics);
  if (spec.patterns.length > 0)
    for (const t of await bus.listTopics())
      if (spec.topicAllowed(t) && spec.patterns.some((p) => p.test(t))) topics.add(t);
  return [...topics];
}
