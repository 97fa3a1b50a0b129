/** JSON value types used across the code base (unknown at boundaries, these inside). */
import { errorText } from './error-text.js';
export type Json = null | boolean | number | string | Json[] | JsonObject;
export type JsonObject = { [key: string]: Json };

export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** What a JSON value is, for messages ('null', 'a list', 'a string'): typeof says 'object' for null and lists. */
export function jsonKind(v: Json): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list';
  return typeof v === 'object' ? 'an object' : `a ${typeof v}`;
}

/** Deterministic JSON text: object keys sorted, so equal content gives equal text. */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return '[' + v.map(canonicalJson).join(',') + ']';
  if (isObject(v)) {
    const keys = Object.keys(v).sort();
    return '{' + keys.map((k) => JSON.stringify(k) + ':' + canonicalJson(v[k])).join(',') + '}';
  }
  return JSON.stringify(v) ?? 'null';
}

export function deepEqual(a: unknown, b: unknown): boolean {
  return canonicalJson(a) === canonicalJson(b);
}

export function clone<T extends Json>(v: T): T {
  return structuredClone(v);
}

/**
 * Offset of the token V8 calls unexpected: the shortest prefix that already fails with
 * "Unexpected token" ends with it (shorter prefixes only run out of input), so bisect.
 */
function unexpectedTokenAt(text: string): number {
  const failsEarly = (n: number) => {
    try {
      JSON.parse(text.slice(0, n));
      return false;
    } catch (e) {
      return e instanceof Error && e.message.startsWith('Unexpected token');
    }
  };
  let lo = 1;
  let hi = text.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (failsEarly(mid)) hi = mid;
    else lo = mid + 1;
  }
  return lo - 1;
}

/** Why `JSON.parse(text)` throws and at which offset, without quoting the text (it may hold secrets). */
export function jsonSyntaxError(err: unknown, text: string): { position: number; reason: string } {
  const msg = errorText(err);
  const m = /position (\d+)/.exec(msg);
  const unexpected = /^Unexpected token ('.+?'), .*is not valid JSON$/s.exec(msg);
  // V8 gives no position for an unexpected token and quotes the body: find the token, drop the quote.
  if (unexpected) return { position: unexpectedTokenAt(text), reason: `unexpected token ${unexpected[1]}` };
  const at = m ? Number(m[1]) : /end of JSON input/.test(msg) ? text.length : 0;
  return { position: at, reason: msg.replace(/ (in JSON )?at position \d+.*$/, '').replace(/^JSON\.parse: /, '') };
}

/** True when `text` is JSON text (JSON.parse accepts it). */
export function isJsonText(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}
