/**
 * A message's `payload` field and the JSON value it stands for (MSG.payload): the field parsed
 * as JSON when it is JSON text, else the text itself. `payloadText` is its inverse, for the
 * produce operation: every JSON value comes back as the same value (a string that would read as
 * JSON, such as "42", is stored as its JSON text, so it stays a string).
 */
import type { Json } from '../lib/json.js';

export function parsePayload(text: string): Json {
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

/** The payload field that reads back (parsePayload) as `value`. */
export function payloadText(value: Json): string {
  if (typeof value !== 'string') return JSON.stringify(value);
  return parsePayload(value) === value ? value : JSON.stringify(value);
}
