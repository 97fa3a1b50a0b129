/**
 * The direct members of a configuration list (the entries one level below its key) and the
 * list's ETag, worked out once per list the store hands out: the Redis store's list cache and
 * the embedded store give the same (frozen) array until the list changes, so a repeated read
 * of an unchanged list (`count`, a GET, a `where` over it) neither filters nor hashes its
 * 10,000 members again.
 */
import type { Entry } from '../store/store.js';
import { listEtagOf } from '../store/etag.js';

type Members = { entries: readonly Entry[]; etag: string };

const memo = new WeakMap<readonly Entry[], Map<string, Members>>();

/** The entries directly below `base` in `listed` (the store's list of `base`), and their ETag. */
export function directMembers(listed: readonly Entry[], base: string): Members {
  let byBase = memo.get(listed);
  const hit = byBase?.get(base);
  if (hit) return hit;
  const prefix = base + '/';
  const entries = listed.filter((e) => e.key.startsWith(prefix) && !e.key.slice(prefix.length).includes('/'));
  const members = { entries, etag: listEtagOf(entries) };
  // Only an array the store shares (frozen) can come back unchanged: others are not kept.
  if (Object.isFrozen(listed)) {
    if (!byBase) memo.set(listed, (byBase = new Map()));
    byBase.set(base, members);
  }
  return members;
}
