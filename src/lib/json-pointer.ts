/**
 * JSON pointers (RFC 6901), one rule for the whole code base: '' is the whole document;
 * otherwise '/'-separated tokens in which '~1' stands for '/' and '~0' for '~'. A '~' followed
 * by anything else makes the pointer invalid. An array is indexed by digits without a leading
 * zero; '-' names the place after its last element.
 */
import type { Json } from './json.js';

/** The rule as a JSON Schema pattern. */
export const pointerPattern = '^(/([^~]|~[01])*)?$';

/** "/a/b~1c" → ['a', 'b/c']; '' → []; undefined when the text is not a pointer. */
export function parsePointer(pointer: string): string[] | undefined {
  if (pointer === '') return [];
  if (!pointer.startsWith('/') || /~(?![01])/.test(pointer)) return undefined;
  return pointer.slice(1).split('/').map(unescapeToken);
}

/** One token as it appears in a pointer, read back: '~1' → '/', '~0' → '~'. */
export function unescapeToken(token: string): string {
  return token.replace(/~1/g, '/').replace(/~0/g, '~');
}

/** One token written as it appears in a pointer: '~' → '~0', '/' → '~1'. */
export function escapeToken(token: string): string {
  return token.replace(/~/g, '~0').replace(/\//g, '~1');
}

/** ['a', 'b/c'] → "/a/b~1c". */
export function formatPointer(tokens: readonly string[]): string {
  return tokens.map((t) => '/' + escapeToken(t)).join('');
}

/** The array index a token names (digits, no leading zero), or undefined. */
export function arrayIndex(token: string): number | undefined {
  return /^(0|[1-9][0-9]*)$/.test(token) ? Number(token) : undefined;
}

/** The value the tokens (from the `from`th on) lead to (own members only), or undefined when there is none. */
export function resolveTokens(doc: Json, tokens: readonly string[], from = 0): Json | undefined {
  let cur: Json | undefined = doc;
  for (let k = from; k < tokens.length; k++) {
    const t = tokens[k]!;
    if (Array.isArray(cur)) {
      const i = arrayIndex(t);
      cur = i === undefined ? undefined : cur[i];
    } else if (cur !== null && typeof cur === 'object') {
      cur = Object.hasOwn(cur, t) ? cur[t] : undefined;
    } else {
      return undefined;
    }
    if (cur === undefined) return undefined;
  }
  return cur;
}
