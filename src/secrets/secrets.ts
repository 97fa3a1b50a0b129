/**
 * Secret objects ({name, data: {k: v}}) between the API and the store: values are encrypted
 * before a commit and never leave a config read in clear. A config read shows
 * every value as REDACTED; writing REDACTED back keeps the stored value, so GET → edit → PUT
 * round-trips without knowing the secrets.
 */
import type { JsonObject } from '../lib/json.js';
import { isObject } from '../lib/json.js';
import type { Strongbox } from './strongbox.js';
import { isCiphertext } from './strongbox.js';
import { isSealed } from './sealed.js';

export const REDACTED = '(secret)';

const context = (key: string, member: string) => `${key}#${member}`;

/**
 * Stored form → plaintext form (for merging and diffs inside a transaction, and for exporters).
 * At an edge site a synced secret holds values sealed for the site (sealed.ts): opened here,
 * in memory only.
 */
export function decryptSecret(box: Strongbox, storeKey: string, stored: JsonObject): JsonObject {
  if (!isObject(stored.data)) return stored;
  const data: JsonObject = {};
  for (const [k, v] of Object.entries(stored.data))
    data[k] =
      typeof v !== 'string'
        ? v
        : isCiphertext(v)
          ? box.decrypt(v, context(storeKey, k))
          : isSealed(v)
            ? box.openSealed(v, storeKey, k)
            : v;
  return { ...stored, data };
}

/** Plaintext form → stored form. REDACTED values keep what `previous` (plaintext) held. */
export function encryptSecret(box: Strongbox, storeKey: string, plain: JsonObject): JsonObject {
  if (!isObject(plain.data)) return plain;
  const data: JsonObject = {};
  for (const [k, v] of Object.entries(plain.data))
    data[k] = typeof v === 'string' ? box.encrypt(v, context(storeKey, k)) : v;
  return { ...plain, data };
}

/** Restores REDACTED placeholders from the previous plaintext value. */
export function unredact(next: JsonObject, previous: JsonObject | undefined): JsonObject {
  if (!isObject(next.data)) return next;
  const prev = previous && isObject(previous.data) ? previous.data : {};
  const data: JsonObject = {};
  for (const [k, v] of Object.entries(next.data)) {
    const old = prev[k];
    data[k] = v === REDACTED && old !== undefined ? old : v;
  }
  return { ...next, data };
}

/** What a config read shows: keys with REDACTED values. */
export function redactSecret(obj: JsonObject): JsonObject {
  // Not an object (refused when written, but shown in that error): the whole value is hidden.
  if (!isObject(obj.data)) return obj.data === undefined ? obj : { ...obj, data: REDACTED };
  const data: JsonObject = {};
  for (const k of Object.keys(obj.data)) data[k] = REDACTED;
  return { ...obj, data };
}
