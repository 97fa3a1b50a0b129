/**
 * Site tokens: the credential an edge site syncs with. 32 random bytes in base64url, shown
 * once by `POST /v1/state/sites/<name>/issue-token`; the store keeps only their SHA-256 (the
 * hashing of login tokens, auth/tokens.ts). They live in their own kv namespace, so the
 * guard of every other route (api/auth-middleware.ts, which looks up `token:<id>`) never knows
 * them: a site token is refused there with 401, and the sync route's guard (routes.ts) accepts
 * nothing else.
 *
 *   fleet:site-token:<site>     → id of the site's one valid token (a new one replaces it)
 *   fleet:site-token-id:<id>    → the site it was issued to
 */
import { randomBytes } from 'node:crypto';
import { tokenId } from '../../auth/tokens.js';
import type { Store } from '../../store/store.js';

const bySite = 'fleet:site-token:';
const byId = 'fleet:site-token-id:';

/** Issues a new token for `site`, revoking the previous one. Returns the token (never stored). */
export async function issueSiteToken(store: Store, site: string): Promise<string> {
  const token = randomBytes(32).toString('base64url');
  const id = tokenId(token);
  const previous = await store.kvGet(bySite + site);
  await store.kvSet(byId + id, site);
  await store.kvSet(bySite + site, id, undefined, { durable: true }); // WAIT for a replica (CONTRACT §10)
  if (previous && previous !== id) await store.kvDel(byId + previous);
  return token;
}

/** The site a token was issued to while it is that site's current token, else undefined. */
export async function siteOfToken(store: Store, token: string): Promise<string | undefined> {
  if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return undefined;
  const id = tokenId(token);
  const site = await store.kvGet(byId + id);
  if (site === undefined) return undefined;
  // Two concurrent issues both write an id; only the one the site points at is valid.
  return (await store.kvGet(bySite + site)) === id ? site : undefined;
}

/** True when `token` is the current token of `site`: one read, the sync routes' usual case. */
export async function isTokenOf(store: Store, site: string, token: string): Promise<boolean> {
  return /^[A-Za-z0-9_-]{43}$/.test(token) && (await store.kvGet(bySite + site)) === tokenId(token);
}
