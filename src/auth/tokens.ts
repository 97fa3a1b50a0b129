/**
 * Login tokens: 32 random bytes (256 bits) in base64url, given to the client once. The store
 * only ever holds the SHA-256 of a token (kv `token:<hex>`, expiring with the token), so a
 * dump of Redis yields nothing that can be replayed.
 */
import { hash, randomBytes } from 'node:crypto';
import { kvPrefix } from '../store/keys.js';
import type { Store } from '../store/store.js';
import { isObject } from '../lib/json.js';

export type TokenRecord = {
  user: string;
  tenant: string;
  /** Milliseconds since the epoch. */
  created: number;
  expires: number;
  /** Digest of the user's password hash when issued: a password change ends old tokens. */
  credential: string;
};

/** What login and refresh answer. */
export type TokenReply = {
  token: string;
  'expires-in': number;
  expires: string;
  'creation-time': string;
};

/** The id of a token: the hex SHA-256 of its text. Also the kv key suffix. */
export function tokenId(token: string): string {
  return hash('sha256', token, 'hex');
}

/** Short digest of a password hash (never the hash itself) to bind tokens to a credential. */
export function credentialOf(passwordHash: string): string {
  return hash('sha256', passwordHash, 'hex').slice(0, 32);
}

/** Bearer tokens are exactly 43 base64url characters; anything else is not ours. */
const tokenForm = /^[A-Za-z0-9_-]{43}$/;

export function looksLikeToken(text: string): boolean {
  return tokenForm.test(text);
}

export async function issueToken(
  store: Store,
  rec: Omit<TokenRecord, 'expires' | 'created'>,
  now: number,
  ttlSeconds: number,
): Promise<TokenReply & { id: string }> {
  const token = randomBytes(32).toString('base64url');
  const id = tokenId(token);
  const record: TokenRecord = { ...rec, created: now, expires: now + ttlSeconds * 1000 };
  // Durable: a restart of an embedded store keeps the session (only the token's hash is stored).
  await store.kvSet(kvPrefix.token + id, JSON.stringify(record), ttlSeconds * 1000, { durable: true });
  return {
    id,
    token,
    'expires-in': ttlSeconds,
    expires: new Date(record.expires).toISOString(),
    'creation-time': new Date(now).toISOString(),
  };
}

function parseRecord(text: string): TokenRecord | undefined {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isObject(v)) return undefined;
  const { user, tenant, created, expires, credential } = v;
  if (typeof user !== 'string' || typeof tenant !== 'string' || typeof credential !== 'string') return undefined;
  if (typeof created !== 'number' || typeof expires !== 'number') return undefined;
  return { user, tenant, created, expires, credential };
}

/** The record of a live token, or undefined (unknown, revoked, or expired at `now`). */
export async function lookupToken(store: Store, id: string, now: number): Promise<TokenRecord | undefined> {
  const text = await store.kvGet(kvPrefix.token + id);
  const rec = text === undefined ? undefined : parseRecord(text);
  if (!rec || rec.expires <= now) return undefined;
  return rec;
}

export async function revokeToken(store: Store, id: string): Promise<void> {
  await store.kvDel(kvPrefix.token + id);
}

/**
 * Deletes the tokens of the users of `credentials` (`<tenant>/<user>` → its credential now, or
 * undefined when it is gone) not bound to that credential: once its user is deleted or its
 * password changed, a token is gone for good, so a rollback that restores the user as it was
 * does not bring it back. One scan of the live tokens: users change rarely. Returns how many it deleted.
 */
export async function revokeStaleTokens(
  store: Store,
  credentials: ReadonlyMap<string, string | undefined>,
): Promise<number> {
  let n = 0;
  for (const key of await store.kvKeys(kvPrefix.token)) {
    const text = await store.kvGet(key);
    const rec = text === undefined ? undefined : parseRecord(text);
    const who = rec ? `${rec.tenant}/${rec.user}` : '';
    if (rec && credentials.has(who) && rec.credential !== credentials.get(who)) {
      await store.kvDel(key);
      n++;
    }
  }
  return n;
}
