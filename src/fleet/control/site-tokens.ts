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
 *   fleet:site-token-gen        → a random word, written again by every issue (below)
 *
 * A process remembers the current token ids it read (every site acknowledges each change it
 * applies, and each of its stream's steps checks its token: a read a change a site otherwise).
 * What it remembers holds while `fleet:site-token-gen` (a random word that every issue writes,
 * after the site's new id) is the word it read there last; it reads that word again when
 * `tokenCacheMs` has passed since, one read for all sites, and forgets every id when the word
 * moved. Issuing a token forgets the site's id in the issuing process at once; another process
 * sharing the store refuses the replaced token within `tokenCacheMs` (its streams end at their
 * next step after that). Until this word, each process dropped every id each second and read
 * them again: at 10,000 sites in churn that was ~4,300 reads a second, one a change a site.
 */
import { randomBytes } from 'node:crypto';
import { tokenId } from '../../auth/tokens.js';
import type { Store } from '../../store/store.js';

const bySite = 'fleet:site-token:';
const byId = 'fleet:site-token-id:';
const generation = 'fleet:site-token-gen';

/** How long a process trusts the token ids it read without reading the generation again (a token replaced elsewhere stops working within this). */
export const tokenCacheMs = 1000;

/** Per store: the token ids read (site → id), valid for the generation `gen`, which was read at `checkedAt`. */
type Ids = {
  ids: Map<string, string>;
  gen: string | undefined;
  checkedAt: number;
  /** The read of the generation in flight (concurrent checks share it). */
  checking: Promise<void> | undefined;
};

const caches = new WeakMap<Store, Ids>();

function cacheOf(store: Store): Ids {
  let c = caches.get(store);
  if (!c) caches.set(store, (c = { ids: new Map(), gen: undefined, checkedAt: -Infinity, checking: undefined }));
  return c;
}

/** Reads the generation when `tokenCacheMs` passed since it was read, and forgets every id when it moved. */
function revalidate(store: Store, c: Ids): Promise<void> | undefined {
  if (Date.now() - c.checkedAt < tokenCacheMs) return undefined;
  c.checking ??= (async () => {
    try {
      const at = Date.now();
      const gen = await store.kvGet(generation);
      if (gen !== c.gen) c.ids.clear();
      c.gen = gen;
      c.checkedAt = at;
    } finally {
      c.checking = undefined;
    }
  })();
  return c.checking;
}

/** The id of `site`'s current token: remembered while the generation holds, else one read. */
async function currentId(store: Store, site: string): Promise<string | undefined> {
  const c = cacheOf(store);
  const checking = revalidate(store, c);
  if (checking) await checking;
  const known = c.ids.get(site);
  if (known !== undefined) return known;
  const gen = c.gen;
  const id = await store.kvGet(bySite + site);
  // Not kept when the generation moved during the read: the id may be the replaced one.
  if (id !== undefined && c.gen === gen) c.ids.set(site, id);
  return id;
}

/** Issues a new token for `site`, revoking the previous one. Returns the token (never stored). */
export async function issueSiteToken(store: Store, site: string): Promise<string> {
  caches.get(store)?.ids.delete(site);
  const token = randomBytes(32).toString('base64url');
  const id = tokenId(token);
  const previous = await store.kvGet(bySite + site);
  await store.kvSet(byId + id, site);
  await store.kvSet(bySite + site, id, undefined, { durable: true }); // WAIT for a replica (CONTRACT §10)
  // After the site's id (a process that reads the new word reads the new id after it), durable
  // like it: a failover that kept the id but lost the word would leave other processes trusting
  // the replaced id.
  await store.kvSet(generation, randomBytes(12).toString('base64url'), undefined, { durable: true });
  if (previous && previous !== id) await store.kvDel(byId + previous);
  // Forgotten again: a check that read the previous id before the write may have remembered it.
  caches.get(store)?.ids.delete(site);
  return token;
}

/** Revokes `site`'s token (the site was deleted): a site made again under its name needs a new one. */
export async function revokeSiteToken(store: Store, site: string): Promise<void> {
  const id = await store.kvGet(bySite + site);
  if (id === undefined) return;
  await store.kvDel(bySite + site);
  await store.kvDel(byId + id);
  // Every process forgets the ids it trusted (as at an issue).
  await store.kvSet(generation, randomBytes(12).toString('base64url'), undefined, { durable: true });
  caches.get(store)?.ids.delete(site);
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
