/**
 * `retry-on`: which failed POSTs are retried. Items: `5xx`, `4xx` (a class `3xx`…`5xx`: a
 * failure), a single status code (`429`, `408`, or as a number, 300–599), `connection` (no response: refused,
 * reset, timed out). Without the field every failure is retried. A failure not listed drops
 * the message at once (to the dead-letter topic when one is set).
 */
import { ApiError } from '../../lib/errors.js';

/** True when a failed attempt with this status (undefined: no response) may be retried. */
export type RetryOn = (status: number | undefined) => boolean;

const bad = (path: string, message: string) => new ApiError('invalid-value', message, { code: 'invalid-config', path });

export function compileRetryOn(v: unknown): RetryOn | undefined {
  if (v === undefined) return undefined;
  if (!Array.isArray(v)) throw bad('retry-on', 'Cannot use retry-on: it must be a list');
  const classes = new Set<number>();
  const codes = new Set<number>();
  let connection = false;
  v.forEach((item, i) => {
    const text = typeof item === 'number' ? String(item) : item;
    if (text === 'connection') connection = true;
    else if (typeof text === 'string' && /^[3-5]xx$/.test(text)) classes.add(Number(text[0]));
    else if (typeof text === 'string' && /^[3-5][0-9]{2}$/.test(text)) codes.add(Number(text));
    else
      throw bad(
        `retry-on[${i}]`,
        `Cannot use ${JSON.stringify(item)} in retry-on[${i}]: write 5xx, 4xx, a status code such as 429, or connection`,
      );
  });
  return (status) => (status === undefined ? connection : codes.has(status) || classes.has(Math.floor(status / 100)));
}

/**
 * The write-time check the schema cannot make: an entry listed twice, once as text and once as
 * a number (`"429"` and `429`; the schema's uniqueness sees two values). Entries that are not
 * codes are the schema's to report.
 */
export function retryOnDuplicates(v: unknown): ApiError[] {
  if (!Array.isArray(v)) return [];
  const seen = new Map<string, number>();
  const out: ApiError[] = [];
  v.forEach((item, i) => {
    const text = typeof item === 'number' ? String(item) : typeof item === 'string' ? item : undefined;
    if (text === undefined) return;
    const first = seen.get(text);
    if (first === undefined) seen.set(text, i);
    else if (v[first] !== item)
      out.push(
        bad(
          `retry-on[${i}]`,
          `Cannot use ${JSON.stringify(item)} in retry-on[${i}]: retry-on[${first}] lists it already (${JSON.stringify(v[first])}); a code is one entry, as text or number`,
        ),
      );
  });
  return out;
}
