import { createHash, hash } from 'node:crypto';
import { canonicalJson } from '../lib/json.js';

/**
 * Strong, quoted ETag; equal content ⇔ equal tag, so it changes exactly when content does.
 * (crypto.hash, one call: a Hash object per ETag cost more than the digest itself.)
 */
export function etagOf(value: unknown): string {
  return '"' + hash('sha256', canonicalJson(value), 'base64url').slice(0, 27) + '"';
}

/**
 * A list's ETag: of its members' keys and ETags (in key order), so it changes exactly when a
 * member is added, removed or changed, without reading any member's content again.
 */
export function listEtagOf(members: ReadonlyArray<{ key: string; etag: string }>): string {
  const h = createHash('sha256');
  for (const m of [...members].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)))
    h.update(m.key).update('\u0000').update(m.etag).update('\n');
  return '"' + h.digest('base64url').slice(0, 27) + '"';
}

/**
 * Whether an If-Match / If-None-Match value ('*' or a comma-separated list of ETags) names
 * `etag`. Our ETags are base64url in quotes, so a comma never occurs inside one.
 */
export function listsEtag(header: string, etag: string): boolean {
  return header.trim() === '*' || header.split(',').some((t) => t.trim() === etag);
}

/**
 * The same with the weak comparison that If-None-Match uses (RFC 9110 13.1.2): `W/"x"` names
 * the ETag `"x"`. If-Match keeps the strong comparison of `listsEtag`.
 */
export function listsEtagWeakly(header: string, etag: string): boolean {
  return header.trim() === '*' || header.split(',').some((t) => t.trim().replace(/^W\//, '') === etag);
}
