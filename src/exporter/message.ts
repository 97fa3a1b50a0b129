/**
 * MSG: `{time, mtime, seqno, remain, producer-name, host, origin, payload}` built
 * from one stream entry. Optional entry fields that are absent are left out of the object and
 * expand to '' as MSG_* variables. The JSON text is made once, lazily: filters and `${MSG}`
 * share it, and an exporter without filters that never names MSG never pays for it.
 */
import type { Json, JsonObject } from '../lib/json.js';
import type { StreamEntry } from '../bus/bus.js';
import { resolveTokens } from '../lib/json-pointer.js';
import { canonicalScan, canonicalTop, keyEscaped, valueEscaped } from '../lib/canonical-json.js';
import { parsePayload } from '../bus/payload.js';
import { digitsDashDigits, maxPlainMtime, membersTail, needleOf, optionalFields, tailPlanOf } from './msg-pieces.js';

/**
 * The ISO text of the last mtime formatted: messages of a busy stream share their millisecond,
 * and toISOString costs about a microsecond.
 */
let lastMtime = NaN;
let lastIso = '';
/** The same for the last mtime as JSON text (a number's String() costs ~0.2 µs). */
let lastTextMtime = NaN;
let lastMtimeText = 'null';

function isoOf(mtime: number): string {
  if (mtime !== lastMtime) {
    lastIso = new Date(mtime).toISOString();
    lastMtime = mtime;
  }
  return lastIso;
}

/** MSG's last time as JSON text: messages of one millisecond share it. */
let lastTime: string | undefined;
let lastTimeJson = '';

function mtimeText(mtime: number): string {
  if (mtime !== lastTextMtime) {
    lastMtimeText = jsonNumber(mtime);
    lastTextMtime = mtime;
  }
  return lastMtimeText;
}

/** A number as JSON.stringify writes it (null when not finite). */
const jsonNumber = (n: number): string => (Number.isFinite(n) ? String(n) : 'null');

/**
 * The milliseconds of an entry id (`<ms>-<seq>`): Number of the part before the dash, read digit
 * by digit when it is 1-15 digits (no slice and no string-to-number parse a message).
 */
function mtimeOf(id: string): number {
  let ms = 0;
  let i = 0;
  for (; i < id.length && i < 16; i++) {
    const c = id.charCodeAt(i);
    if (c === 45) break;
    if (c < 48 || c > 57) {
      i = 16;
      break;
    }
    ms = ms * 10 + (c - 48);
  }
  if (i > 0 && i < 16) return ms;
  const dash = id.indexOf('-');
  return Number(dash < 0 ? id : id.slice(0, dash));
}

export class Message {
  readonly topic: string;
  readonly entry: StreamEntry;
  readonly remain: number;
  readonly mtime: number;
  private payloadCache: Json | undefined;
  private objectCache: JsonObject | undefined;
  private textCache: string | undefined;
  private headCache: string | undefined;
  private payloadTextCache: string | undefined;
  private canonicalCache: boolean | undefined;
  private plainStampCache: boolean | undefined;

  constructor(topic: string, entry: StreamEntry, remain: number) {
    this.topic = topic;
    this.entry = entry;
    this.remain = remain;
    this.mtime = mtimeOf(entry.id);
  }

  /** The payload field: its JSON value when it is JSON text, else the text itself (parsed once, when asked for). */
  get payload(): Json {
    return (this.payloadCache ??= parsePayload(this.entry.fields.payload ?? ''));
  }

  /**
   * Whether the payload field is canonical JSON (exactly JSON.stringify of its value, which a
   * producer's JSON.stringify writes; lib/canonical-json.ts): its text then stands for its
   * value's JSON text, in MSG's text and in what a pointer reads, without parsing it and
   * writing it again (the payload is parsed otherwise).
   */
  private get canonical(): boolean {
    return (this.canonicalCache ??= canonicalScan(this.entry.fields.payload ?? '') >= 0);
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
    this.headCache = undefined;
    this.payloadTextCache = undefined;
    this.canonicalCache = undefined;
  }

  get time(): string {
    const t = this.entry.fields.time;
    if (t !== undefined) return t;
    return isoOf(this.mtime);
  }

  get object(): JsonObject {
    if (this.objectCache) return this.objectCache;
    const o: JsonObject = { time: this.time, mtime: this.mtime, seqno: this.entry.id, remain: this.remain };
    for (const k of optionalFields) {
      const v = this.entry.fields[k];
      if (v !== undefined) o[k] = v;
    }
    o.payload = this.payload;
    this.objectCache = o;
    return o;
  }

  /**
   * The JSON serialisation of MSG that filters test and `${MSG}` expands to: JSON.stringify of
   * `object`, written member by member (the same text, without building MSG first and without
   * JSON.stringify's walk of MSG's own members: ~0.5 µs a message less).
   */
  get text(): string {
    if (this.textCache === undefined) {
      // A canonical payload is its value's JSON text as it stands.
      const payload = this.canonical ? this.entry.fields.payload! : JSON.stringify(this.payload);
      this.textCache = `${this.head}${payload}}`;
    }
    return this.textCache;
  }

  /** MSG's text up to its payload's value: the stamp, then the optional members and `,"payload":`. */
  private get head(): string {
    if (this.headCache === undefined) {
      const time = this.time;
      if (time !== lastTime) {
        lastTimeJson = JSON.stringify(time);
        lastTime = time;
      }
      this.headCache = `{"time":${lastTimeJson},"mtime":${mtimeText(this.mtime)},"seqno":${JSON.stringify(this.entry.id)},"remain":${jsonNumber(this.remain)}${membersTail(this.entry.fields)}`;
    }
    return this.headCache;
  }

  /**
   * Whether MSG's stamp (`{"time":…,"remain":…`) is made of digits in the shape `stampShape`
   * (msg-pieces.ts) stands for: no `time` field (the ISO text of an mtime of years 0–9999), an
   * id `<ms>-<seq>` of digits, a whole remain.
   */
  private get plainStamp(): boolean {
    if (this.plainStampCache === undefined) {
      const t = this.mtime;
      const r = this.remain;
      this.plainStampCache =
        this.entry.fields.time === undefined &&
        Number.isInteger(t) &&
        t >= 0 &&
        t <= maxPlainMtime &&
        Number.isSafeInteger(r) &&
        r >= 0 &&
        digitsDashDigits(this.entry.id);
    }
    return this.plainStampCache;
  }

  /**
   * Whether MSG's text contains `s` (the literal filters), told without making the text when the
   * payload is canonical and `s` cannot reach into the stamp (msg-pieces.ts `needleOf`): the
   * text is then the stamp, the members' tail (the same for messages of one producer), the
   * payload field as it stands and `}`, and `s` is in the tail, in the payload or across their
   * boundaries. What is saved a message: the text, its flat copy, and the searches of its first
   * ~100 characters.
   */
  includes(s: string): boolean {
    const raw = this.entry.fields.payload;
    // Shorter than `s`, the payload could hold an occurrence running from the tail to the `}`.
    if (this.textCache !== undefined || raw === undefined || raw.length < s.length || !this.canonical)
      return this.text.includes(s);
    const needle = needleOf(s);
    if (needle.nearStamp || !this.plainStamp) return this.text.includes(s);
    const tail = tailPlanOf(membersTail(this.entry.fields), s);
    if (tail.within || raw.includes(s)) return true;
    for (const rest of tail.rests) if (raw.startsWith(rest)) return true;
    return needle.beforeBrace !== undefined && raw.endsWith(needle.beforeBrace);
  }

  /**
   * The value at a JSON pointer's tokens in MSG as variable text (resolvePointer of `object`):
   * a pointer into one member (`/payload/temp`) reads that member, without building MSG.
   */
  valueAt(tokens: readonly string[]): string | undefined {
    if (tokens.length === 0) return this.text;
    let top: Json | undefined;
    switch (tokens[0]) {
      case 'time':
        top = this.time;
        break;
      case 'mtime':
        top = this.mtime;
        break;
      case 'seqno':
        top = this.entry.id;
        break;
      case 'remain':
        top = this.remain;
        break;
      case 'producer-name':
      case 'host':
      case 'origin':
        top = this.entry.fields[tokens[0]];
        break;
      case 'payload': {
        const v = this.payloadCache === undefined ? this.canonicalAt(tokens) : null;
        if (v !== null) return v;
        top = this.payload;
        break;
      }
      default:
        return undefined;
    }
    const value = top === undefined || tokens.length === 1 ? top : resolveTokens(top, tokens, 1);
    return value === undefined || typeof value === 'string' ? value : JSON.stringify(value);
  }

  /**
   * What `valueAt` answers for a pointer into the payload (`/payload`, `/payload/<member>`),
   * read from a canonical payload's text without parsing it; null when it cannot tell this way
   * (the payload is parsed): not canonical, deeper pointers, a key written with an escape.
   */
  private canonicalAt(tokens: readonly string[]): string | undefined | null {
    if (!this.canonical || tokens.length > 2) return null;
    const raw = this.entry.fields.payload!;
    if (tokens.length === 1) {
      if (raw.charCodeAt(0) !== 0x22) return raw;
      return raw.includes('\\') ? null : raw.slice(1, -1);
    }
    if (raw.charCodeAt(0) !== 0x7b) return null;
    const name = tokens[1]!;
    let escapedKeys = false;
    // The places of the last payload scanned: this one's, unless another was scanned since.
    const n = canonicalScan(raw);
    const m = canonicalTop;
    for (let k = 0; k < n; k += 5) {
      const flags = m[k + 4]!;
      // Keys are unique: a key written as it is and equal to the name is the member.
      if (flags & keyEscaped) escapedKeys = true;
      else if (m[k + 1]! - m[k]! === name.length && raw.startsWith(name, m[k])) {
        const vs = m[k + 2]!;
        const ve = m[k + 3]!;
        if (raw.charCodeAt(vs) !== 0x22) return raw.slice(vs, ve);
        return flags & valueEscaped ? (JSON.parse(raw.slice(vs, ve)) as string) : raw.slice(vs + 1, ve - 1);
      }
    }
    // Absent, unless it is one of the keys written with an escape.
    return escapedKeys ? null : undefined;
  }

  /** MSG_PAYLOAD: strings as is, other JSON values as their JSON text. */
  get payloadText(): string {
    if (this.payloadTextCache === undefined) {
      const raw = this.entry.fields.payload;
      if (this.canonical && raw!.charCodeAt(0) !== 0x22) return (this.payloadTextCache = raw!);
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
