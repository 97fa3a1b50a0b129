/**
 * Canonical JSON text: text that is exactly `JSON.stringify(JSON.parse(text))`. A stream entry's
 * payload is nearly always written by a JSON.stringify, and such a payload can be used as it is
 * where its value's JSON text is wanted (MSG's text, a member read by a JSON pointer) instead of
 * being parsed and written again. `canonicalMembers` answers in one pass over the text, without
 * building the value; it says no whenever it cannot tell for sure (then the caller parses):
 *
 * - no whitespace outside strings; strings with only the escapes JSON.stringify writes (`\"`,
 *   `\\`, `\b \f \n \r \t`, and `\u00xx` in lowercase for the other control characters), no raw
 *   control character, no lone surrogate (JSON.stringify escapes it: not taken here);
 * - numbers written as String(Number(text)) writes them (`1.50`, `1e5`, `-0`, `01` are not);
 * - object keys: none twice in one object (JSON.parse keeps the last value at the first place),
 *   none starting with a digit (an array-index key moves to the front in JSON.stringify);
 * - at most `maxDepth` levels of nesting.
 */

/** Deeper values are not followed (the caller parses). */
const maxDepth = 64;
/** Objects with more keys check them for duplicates with a Set rather than pair by pair. */
const manyKeys = 16;

/** A top-level member's key was written with an escape (`flags` of `canonicalMembers`). */
export const keyEscaped = 1;
/** A top-level member's value is a string written with an escape. */
export const valueEscaped = 2;

/** The places [start, end) of the keys of the objects being scanned, innermost last: the first `keyTop`. */
const keyPlaces: number[] = [];
let keyTop = 0;
/** The members of the top-level object of the last text scanned: the first `topCount`. */
const top: number[] = [];
let topCount = 0;
/** Whether the last string scanned (`str`) was written with an escape. */
let escaped = false;
/** The last text scanned by `canonicalScan`, and its answer. */
let lastText: string | undefined;
let lastCount = -1;

/**
 * Scans `text` (or answers from the last scan when it is the same text): when it is canonical
 * JSON, the number of entries of its top-level members in `canonicalTop` (runs of five numbers:
 * key start, key end, inside the quotes; value start, value end; flags, `keyEscaped` |
 * `valueEscaped`; none for a canonical value other than an object), else -1 (not canonical, or
 * not surely). `canonicalTop` holds them until the next scan of another text: no array is made
 * a scan (a message's payload is scanned once, then read from while it is expanded).
 */
export function canonicalScan(text: string): number {
  if (text === lastText) return lastCount;
  topCount = 0;
  keyTop = 0;
  const end = text.length > 0 ? value(text, 0, 0) : -1;
  lastText = text;
  lastCount = end === text.length ? topCount : -1;
  return lastCount;
}

/** The members found by the last `canonicalScan` (its first `n` entries). */
export const canonicalTop: readonly number[] = top;

/** `canonicalScan`'s answer as an array of its own: the members' places, or false. */
export function canonicalMembers(text: string): number[] | false {
  const n = canonicalScan(text);
  return n < 0 ? false : top.slice(0, n);
}

/** The end of the value at `i`, or -1 when it is not canonical. */
function value(t: string, i: number, depth: number): number {
  const c = t.charCodeAt(i);
  if (c === 0x22) return str(t, i);
  if (c === 0x7b) return object(t, i, depth + 1);
  if (c === 0x5b) return array(t, i, depth + 1);
  if (c === 0x74) return t.startsWith('true', i) ? i + 4 : -1;
  if (c === 0x66) return t.startsWith('false', i) ? i + 5 : -1;
  if (c === 0x6e) return t.startsWith('null', i) ? i + 4 : -1;
  return num(t, i);
}

/** A lowercase hex digit's value, else -1. */
function hex(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  return -1;
}

/** A run of characters written as they are. */
const plainRun = /[^"\\\u0000-\u001f\ud800-\udfff]*/y;

/** The end of the string at `i` (its quote), or -1 when it is not canonical; sets `escaped`. */
function str(t: string, i: number): number {
  escaped = false;
  let j = i + 1;
  // Short strings (keys, most values) in a loop; a long run of plain characters is left to the
  // regular expression engine, faster at it than a loop once past a few dozen characters.
  const n = t.length;
  for (const stop = Math.min(j + 24, n); j < stop; j++) {
    const c = t.charCodeAt(j);
    if (c === 0x22) return j + 1;
    if (c === 0x5c || c < 0x20 || (c >= 0xd800 && c <= 0xdfff)) break;
  }
  if (j === i + 25 && j < n) {
    plainRun.lastIndex = j;
    plainRun.test(t);
    j = plainRun.lastIndex;
  }
  for (; j < n; j++) {
    const c = t.charCodeAt(j);
    if (c === 0x22) return j + 1;
    if (c === 0x5c) {
      escaped = true;
      const d = t.charCodeAt(j + 1);
      // \" \\ \b \f \n \r \t
      if (d === 0x22 || d === 0x5c || d === 0x62 || d === 0x66 || d === 0x6e || d === 0x72 || d === 0x74) {
        j++;
        continue;
      }
      // \u00xx: only for a control character without a short escape.
      if (d !== 0x75 || t.charCodeAt(j + 2) !== 0x30 || t.charCodeAt(j + 3) !== 0x30) return -1;
      const hi = hex(t.charCodeAt(j + 4));
      const lo = hex(t.charCodeAt(j + 5));
      if (hi < 0 || hi > 1 || lo < 0) return -1;
      const code = hi * 16 + lo;
      if (code === 8 || code === 9 || code === 10 || code === 12 || code === 13) return -1;
      j += 5;
      continue;
    }
    if (c < 0x20) return -1;
    if (c >= 0xd800 && c <= 0xdfff) {
      // A surrogate pair is written as it is; a lone surrogate would be escaped.
      const d = t.charCodeAt(j + 1);
      if (c >= 0xdc00 || !(d >= 0xdc00 && d <= 0xdfff)) return -1;
      j++;
    }
  }
  return -1;
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

/** The end of the number at `i`, or -1 when it is not one written as String(Number()) writes it. */
function num(t: string, i: number): number {
  let j = i;
  if (t.charCodeAt(j) === 0x2d) j++;
  const first = j;
  while (isDigit(t.charCodeAt(j))) j++;
  let plain = j > first && j - first <= 15;
  // Fraction or exponent: decided by String(Number()) below.
  for (let c = t.charCodeAt(j); isDigit(c) || c === 0x2e || c === 0x65 || c === 0x45 || c === 0x2b || c === 0x2d;) {
    plain = false;
    c = t.charCodeAt(++j);
  }
  if (j === i) return -1;
  // An integer of at most 15 digits is written as it is, but for a leading zero and -0.
  if (plain) return t.charCodeAt(first) !== 0x30 || (j === first + 1 && first === i) ? j : -1;
  const text = t.slice(i, j);
  return String(Number(text)) === text ? j : -1;
}

function array(t: string, i: number, depth: number): number {
  if (depth > maxDepth) return -1;
  if (t.charCodeAt(i + 1) === 0x5d) return i + 2;
  for (let j = i + 1; ;) {
    j = value(t, j, depth);
    if (j < 0) return -1;
    const c = t.charCodeAt(j++);
    if (c === 0x5d) return j;
    if (c !== 0x2c) return -1;
  }
}

/** Whether the key [a, b) equals the key [c, d) (canonical keys: equal text, equal key). */
function sameKey(t: string, a: number, b: number, c: number, d: number): boolean {
  if (b - a !== d - c) return false;
  for (let k = 0; k < b - a; k++) if (t.charCodeAt(a + k) !== t.charCodeAt(c + k)) return false;
  return true;
}

function object(t: string, i: number, depth: number): number {
  if (depth > maxDepth) return -1;
  if (t.charCodeAt(i + 1) === 0x7d) return i + 2;
  const base = keyTop;
  const end = members(t, i + 1, depth, base);
  keyTop = base;
  return end;
}

/** Whether the key [ks, ke) is not among the object's keys so far (from `base` in keyPlaces). */
function unseen(t: string, base: number, ks: number, ke: number, many: Set<string> | undefined): boolean {
  if (many) {
    const k = t.slice(ks, ke);
    if (many.has(k)) return false;
    many.add(k);
    return true;
  }
  for (let p = base; p < keyTop; p += 2) if (sameKey(t, keyPlaces[p]!, keyPlaces[p + 1]!, ks, ke)) return false;
  return true;
}

/** The end of the object whose members start at `i` (after its `{`), each key checked against the others. */
function members(t: string, i: number, depth: number, base: number): number {
  let many: Set<string> | undefined;
  for (let j = i; ;) {
    const ks = j + 1;
    // A key that may be an array index moves to the front in JSON.stringify.
    if (t.charCodeAt(j) !== 0x22 || isDigit(t.charCodeAt(ks))) return -1;
    j = str(t, j);
    if (j < 0) return -1;
    const kEsc = escaped;
    const ke = j - 1;
    if (!many && keyTop - base >= 2 * manyKeys) {
      many = new Set();
      for (let p = base; p < keyTop; p += 2) many.add(t.slice(keyPlaces[p], keyPlaces[p + 1]));
    }
    if (!unseen(t, base, ks, ke, many)) return -1;
    keyPlaces[keyTop++] = ks;
    keyPlaces[keyTop++] = ke;
    if (t.charCodeAt(j++) !== 0x3a) return -1;
    const vs = j;
    let vEsc = false;
    if (t.charCodeAt(j) === 0x22) {
      j = str(t, j);
      vEsc = escaped;
    } else j = value(t, j, depth);
    if (j < 0) return -1;
    if (depth === 1) {
      top[topCount++] = ks;
      top[topCount++] = ke;
      top[topCount++] = vs;
      top[topCount++] = j;
      top[topCount++] = (kEsc ? keyEscaped : 0) | (vEsc ? valueEscaped : 0);
    }
    const c = t.charCodeAt(j++);
    if (c === 0x7d) return j;
    if (c !== 0x2c) return -1;
  }
}
