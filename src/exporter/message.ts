/**
 * MSG: `{time, mtime, seqno, remain, producer-name, host, origin, payload}` built
 * from one stream entry. Optional entry fields that are absent are left out of the object and
 * expand to '' as MSG_* variables. The JSON text is made once, lazily: filters and `${MSG}`
 * share it, and an exporter without filters that never names MSG never pays for it.
 */
import type { Json, JsonObject } from '../lib/json.js';
import type { StreamEntry } from '../bus/bus.js';
import { resolveTokens } from '../lib/json-pointer.js';

function parsePayload(text: string): Json {
  // Only text that can start a JSON value is tried, so plain strings skip the exception path.
  const c = text.charCodeAt(0);
  const maybe =
    c === 123 ||
    c === 91 ||
    c === 34 ||
    c === 45 ||
    (c >= 48 && c <= 57) ||
    text === 'true' ||
    text === 'false' ||
    text === 'null';
  if (!maybe) return text;
  try {
    return JSON.parse(text) as Json;
  } catch {
    return text;
  }
}

/**
 * The ISO text of the last mtime formatted: messages of a busy stream share their millisecond,
 * and toISOString costs about a microsecond.
 */
let lastMtime = NaN;
let lastIso = '';

function isoOf(mtime: number): string {
  if (mtime !== lastMtime) {
    lastIso = new Date(mtime).toISOString();
    lastMtime = mtime;
  }
  return lastIso;
}

export class Message {
  readonly topic: string;
  readonly entry: StreamEntry;
  readonly remain: number;
  readonly mtime: number;
  private payloadCache: Json | undefined;
  private objectCache: JsonObject | undefined;
  private textCache: string | undefined;
  private payloadTextCache: string | undefined;

  constructor(topic: string, entry: StreamEntry, remain: number) {
    this.topic = topic;
    this.entry = entry;
    this.remain = remain;
    const dash = entry.id.indexOf('-');
    this.mtime = Number(dash < 0 ? entry.id : entry.id.slice(0, dash));
  }

  /** The payload field: its JSON value when it is JSON text, else the text itself (parsed once, when asked for). */
  get payload(): Json {
    return (this.payloadCache ??= parsePayload(this.entry.fields.payload ?? ''));
  }

  /**
   * Forgets what was derived from the entry (parsed payload, MSG and its text): called once the
   * message is expanded, while it waits for its POST and ack (in a batch, thousands may wait),
   * so that only the entry stays held. Each is derived again if asked for.
   */
  release(): void {
    this.payloadCache = undefined;
    this.objectCache = undefined;
    this.textCache = undefined;
    this.payloadTextCache = undefined;
  }

  get time(): string {
    const t = this.entry.fields.time;
    if (t !== undefined) return t;
    return isoOf(this.mtime);
  }

  get object(): JsonObject {
    if (this.objectCache) return this.objectCache;
    const o: JsonObject = { time: this.time, mtime: this.mtime, seqno: this.entry.id, remain: this.remain };
    for (const k of ['producer-name', 'host', 'origin'] as const) {
      const v = this.entry.fields[k];
      if (v !== undefined) o[k] = v;
    }
    o.payload = this.payload;
    this.objectCache = o;
    return o;
  }

  /** The JSON serialisation of MSG that filters test and `${MSG}` expands to. */
  get text(): string {
    if (this.textCache === undefined) this.textCache = JSON.stringify(this.object);
    return this.textCache;
  }

  /** MSG_PAYLOAD: strings as is, other JSON values as their JSON text. */
  get payloadText(): string {
    if (this.payloadTextCache === undefined) {
      const payload = this.payload;
      this.payloadTextCache = typeof payload === 'string' ? payload : JSON.stringify(payload);
    }
    return this.payloadTextCache;
  }

  /** Built-in message variables; undefined for any other name. */
  variable(name: string): string | undefined {
    switch (name) {
      case 'MSG':
        return this.text;
      case 'TOPIC':
        return this.topic;
      case 'MSG_PAYLOAD':
        return this.payloadText;
      case 'MSG_SEQNO':
        return this.entry.id;
      case 'MSG_MTIME':
        return String(this.mtime);
      case 'MSG_TIME':
        return this.time;
      case 'MSG_REMAIN':
        return String(this.remain);
      case 'MSG_HOST':
        return this.entry.fields.host ?? '';
      case 'MSG_ORIGIN':
        return this.entry.fields.origin ?? '';
      case 'MSG_PRODUCER_NAME':
        return this.entry.fields['producer-name'] ?? '';
      default:
        return undefined;
    }
  }
}

/** The value at the pointer as variable text (strings as is, other JSON as JSON text), or undefined. */
export function resolvePointer(doc: Json, tokens: readonly string[]): string | undefined {
  const value = resolveTokens(doc, tokens);
  return value === undefined || typeof value === 'string' ? value : JSON.stringify(value);
}
