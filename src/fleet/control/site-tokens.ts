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
 *
 * A process remembers the current token id of the sites it checked for at most `tokenCacheMs`
 * (every site acknowledges each change it applies, and each of its stream's steps checks its
 * token: two reads a change a site otherwise). Issuing a token forgets the site's id in the
 * issuing process at once; another process sharing the store refuses the replaced token within
 * `tokenCacheMs` (its streams end at their next step after that).
 */
import { randomBytes } from 'node:crypto';
import { tokenId } from '../../auth/tokens.js';
import type { Store } from '../../store/store.js';

const bySite = 'fleet:site-token:';
const byId = 'fleet:site-token-id:';

/** How long a process trusts the token id it read for a site (a token replaced elsewhere stops working within this). */
export const tokenCacheMs = 1000;

/**
 * Per store, the token ids read in the current period: site → id. The whole map is dropped
 * `tokenCacheMs` after its first entry (one timer while it holds any), so it never holds more
 * than the sites heard from in that time, and nothing while the fleet is idle.
 */
const caches = new WeakMap<Store, Map<string, string>>();

function cacheOf(store: Store): Map<string, string> {
  let ids = caches.get(store);
  if (!ids) caches.set(store, (ids = new Map()));
  return ids;
}

function remember(store: Store, site: string, id: string): void {
  const ids = cacheOf(store);
  if (ids.size === 0) setTimeout(() => ids.clear(), tokenCacheMs).unref();
  ids.set(site, id);
}

/** The id of `site`'s current token: remembered for up to tokenCacheMs, else one read. */
async function currentId(store: Store, site: string): Promise<string | undefined> {
  const known = caches.get(store)?.get(site);
  if (known !== undefined) return known;
  const id = await store.kvGet(bySite + site);
  if (id !== undefined) remember(store, site, id);
  return id;
}

/** Issues a new token for `site`, revoking the previous one. Returns the token (never stored). */
export async function issueSiteToken(store: Store, site: string): Promise<string> {
  caches.get(store)?.delete(site);
  const token = randomBytes(32).toString('base64url');
  const id = tokenId(token);
  const previous = await store.kvGet(bySite + site);
  await store.kvSet(byId + id, site);
  await store.kvSet(bySite + site, id, undefined, { durable: true }); // WAIT for a replica (CONTRACT §10)
  if (previous && previous !== id) await store.kvDel(byId + previous);
  // Forgotten again: a check that read the previous id before the write may have remembered it.
  caches.get(store)?.delete(site);
  return token;
}

/** The site a token was issued to while it is that site's current token, else undefined. */
export async function siteOfToken(store: Store, token: string): Promise<string | undefined> {
  if (!/^[A-Za-z0-9_-]{43}$/.test(token)) return undefined;
  const id = tokenId(token);
  const site = await store.kvGet(byId + id);
  if (site === undefined) return undefined;
  // Two concurrent issues both write an id; only the one the site points at is valid.
  return (await currentId(store, site)) === id ? site : undefined;
}

/** True when `token` is the current token of `site`: at most one read, the sync routes' usual case. */
export async function isTokenOf(store: Store, site: string, token: string): Promise<boolean> {
  return /^[A-Za-z0-9_-]{43}$/.test(token) && (await currentId(store, site)) === tokenId(token);
}

/**
 * The id a check of `token` compares (isIdOfToken): a sync stream checks its token at every
 * step, and hashing it each time was most of the check. '' for what cannot be a token.
 */
export function checkedTokenId(token: string): string {
  return /^[A-Za-z0-9_-]{43}$/.test(token) ? tokenId(token) : '';
}

/** isTokenOf, for the id checkedTokenId gave. */
export async function isIdOfToken(store: Store, site: string, id: string): Promise<boolean> {
  return id !== '' && (await currentId(store, site)) === id;
}
