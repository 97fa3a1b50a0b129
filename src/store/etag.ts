import { createHash } from 'node:crypto';
import { canonicalJson } from '../json.js';

/** Strong, quoted ETag; equal content ⇔ equal tag, so it changes exactly when content does. */
export function etagOf(value: unknown): string {
  return '"' + createHash('sha256').update(canonicalJson(value)).digest('base64url').slice(0, 27) + '"';
}
