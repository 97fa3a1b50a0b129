/**
 * What an HTTP header value may hold (RFC 9110 field-value: tab, visible ASCII, obs-text
 * bytes; undici refuses anything else). A CR or LF in a value would split the request, so a
 * static value holding one is a 400 at write time, and an expanded one ignores the message at
 * run time (never retried: every attempt would fail the same way).
 */

const names: Record<string, string> = { '\r': 'a carriage return (CR)', '\n': 'a line feed (LF)', '\0': 'a NUL' };

/** Undefined when the value can be sent; else what is wrong with it, e.g. `holds a line feed (LF) at position 4`. */
export function badHeaderChar(value: string): string | undefined {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c === 9 || (c >= 0x20 && c <= 0x7e) || (c >= 0x80 && c <= 0xff)) continue;
    const ch = value[i]!;
    const what =
      names[ch] ?? (c < 0x20 || c === 0x7f ? `the control character U+${hex(c)}` : `U+${hex(c)}, outside Latin-1`);
    return `holds ${what} at position ${i}`;
  }
  return undefined;
}

const hex = (c: number) => c.toString(16).toUpperCase().padStart(4, '0');
