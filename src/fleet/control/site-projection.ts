/**
 * A projector pass's work at each site (projector.ts decides when a pass runs and which sites it
 * looks at): what the site's log holds (read once, then kept up to date in PassState), the
 * set that applies to it now (applicable.ts, through the site's rollout view), the difference
 * as one entry (secrets sealed for the key the site presented, sealing.ts) and its append, a
 * compare-and-set on the site's head (change-log.ts). Sites are independent, so a pass appends
 * to `appendsAtOnce` of them at once.
 */
import { etagOf } from '../../store/etag.js';
import type { Store } from '../../store/store.js';
import type { JsonObject } from '../../lib/json.js';
import { log } from '../../lib/log.js';
import type { Strongbox } from '../../secrets/strongbox.js';
import { site as siteResource } from '../../resources/site.js';
import { applicableTo, type ViewIndex } from './applicable.js';
import type { FleetChange } from '../common/protocol.js';
import type { FleetLog } from './change-log.js';
import { isSecretKey, kidOf, recordedKeyOf, sealSecretFor, sentFingerprint, sourceFingerprint } from './sealing.js';
import { errorText } from '../../lib/error-text.js';
import type { Rollouts, SiteViews } from './rollouts.js';
import { interned, KnownLogs, type Known } from './known-logs.js';

export type ProjectorOptions = {
  store: Store;
  fleetLog: FleetLog;
  root: string;
  /** The control plane's own site: it runs from the configuration itself, without a log. */
  ownSite: string;
  historyMs: number;
  resyncMs?: number;
  now?: () => number;
  /**
   * The control plane's secret store: vault secrets are sealed for each site's public key
   * (sealing.ts). A site that has not presented a key yet receives no secrets; while the store
   * is sealed, a site whose secrets need sealing again is left as it is until it unseals.
   */
  strongbox?: Strongbox;
  /** Staged rollouts (rollouts.ts): which sites keep an object's previous content for now. */
  rollouts?: Rollouts;
};

/** The whole configuration at one revision, as a pass reads it. */
export type Read = {
  rev: number;
  view: ReadonlyMap<string, JsonObject>;
  etags: ReadonlyMap<string, string>;
  index: ViewIndex;
};

/** Sites projected at once in a pass (their appends in flight together). */
const appendsAtOnce = 256;

/**
 * What `site`'s log must append to go from what it holds (`k`) to `desired`: the puts, with
 * every object's ETag as the site will hold it (a secret sealed for the key the site
 * presented, compared by fingerprint), and the deletes. 'sealed': a secret needs sealing while
 * the secret store is sealed; 'unsealable': a secret could not be sealed (both leave the site
 * as it is until a later pass).
 */
async function siteChanges(
  o: ProjectorOptions,
  site: string,
  k: Known,
  read: Read,
  desired: Map<string, JsonObject>,
): Promise<{ changes: FleetChange[]; etags: Array<string | undefined> } | 'sealed' | 'unsealable'> {
  const { view } = read;
  const changes: FleetChange[] = [];
  /** The ETag each change leaves at the site (undefined for a delete), aligned with `changes`. */
  const etags: Array<string | undefined> = [];
  let publicKey: string | undefined;
  let keyRead = false;
  for (const [key, value] of desired) {
    if (!isSecretKey(key)) {
      // The store's ETag when the site gets the stored object itself (not a copy made for it).
      const etag = (view.get(key) === value ? read.etags.get(key) : undefined) ?? etagOf(value);
      if (k.etags.get(key) !== etag) {
        changes.push({ op: 'put', key, value });
        etags.push(etag);
      }
      continue;
    }
    // A secret leaves the control plane only sealed for the key the site presented.
    if (!keyRead) {
      publicKey = await o.store.kvGet(recordedKeyOf(site));
      keyRead = true;
    }
    if (publicKey === undefined || !o.strongbox) {
      desired.delete(key);
      continue;
    }
    const etag = etagOf(sourceFingerprint(value, kidOf(publicKey)));
    if (k.etags.get(key) === etag) continue;
    if (o.strongbox.sealed) return 'sealed';
    let sealed: JsonObject;
    try {
      sealed = sealSecretFor(o.strongbox, site, publicKey, key, value);
    } catch (err) {
      // One unreadable secret holds back its site only (the next pass tries again), not the fleet.
      log('warn', 'fleet: cannot seal a secret for a site; its changes wait', {
        site,
        key,
        error: errorText(err),
      });
      return 'unsealable';
    }
    changes.push({ op: 'put', key, value: sealed });
    etags.push(etag);
  }
  for (const key of k.etags.keys())
    if (!desired.has(key)) {
      changes.push({ op: 'delete', key });
      etags.push(undefined);
    }
  return { changes, etags };
}

/** What `site`'s log holds, as the projector compares it: its head, revision and the ETag of each object. */
async function loadKnown(fleetLog: FleetLog, site: string): Promise<Known> {
  const snap = await fleetLog.snapshot(site);
  return {
    version: snap.version,
    rev: snap.rev,
    etags: new Map(
      [...snap.objects].map(([key, v]) => [interned(key), interned(etagOf(isSecretKey(key) ? sentFingerprint(v) : v))]),
    ),
  };
}

/** What a projector keeps between passes. */
export interface PassState {
  /** Per site: the log's head version, the revision it projects, the etags it holds. */
  known: KnownLogs;
  /** Sites left by the last pass because the secret store is sealed (logged once per pass). */
  sealedSkips: Set<string>;
  /** Sites a pass left as they were (their secrets could not be sealed): the next pass looks again. */
  redo: Set<string>;
  /** Sites a caller asked to project (projectSite): the next pass looks at them. */
  wanted: Set<string>;
  /** Set by a resync: the next pass reads every ETag and the sites with a log again. */
  readAll: boolean;
  /** Set by a pass that needs another (a lost compare-and-set, no read at one revision). */
  again: boolean;
  againFull: boolean;
}

export async function knownOf(o: ProjectorOptions, st: PassState, site: string): Promise<Known> {
  let k = st.known.get(site);
  if (!k) st.known.set(site, (k = await loadKnown(o.fleetLog, site)));
  return k;
}

/** Appends to one site's log the changes that bring it to `read`. */
async function projectSite(
  o: ProjectorOptions,
  st: PassState,
  site: string,
  read: Read,
  views: SiteViews,
): Promise<void> {
  const { rev, view } = read;
  const k = await knownOf(o, st, site);
  if (k.rev > rev) return; // another process already projected a newer configuration
  // A site whose turn in a rollout has not come gets the rolled-out objects' previous content.
  const given = views(site) ?? read;
  // A site whose object was deleted receives nothing more: its synced set empties.
  const desired = view.has(siteResource.keyOf(o.root, site))
    ? applicableTo(given.view, site, o.root, given.index)
    : new Map<string, JsonObject>();
  const diff = await siteChanges(o, site, k, read, desired);
  if (diff === 'sealed') {
    st.sealedSkips.add(site);
    st.redo.add(site);
    return;
  }
  if (diff === 'unsealable') {
    st.redo.add(site);
    return;
  }
  const { changes, etags } = diff;
  if (changes.length === 0) return;
  const version = await o.fleetLog.append(site, k.version, rev, changes);
  if (version === undefined) {
    // Another process appended first: forget what we knew and look again.
    st.known.delete(site);
    st.again = true;
    return;
  }
  // The site's entry is brought up in place (not a new map of every object it holds a change).
  st.known.applied(site, k, version, rev, changes, etags);
}

/** Projects the sites in `scope` of `sites`, and those a previous pass had to leave or this process does not know yet. */
export async function projectSites(
  o: ProjectorOptions,
  st: PassState,
  sites: Set<string>,
  read: Read,
  scope: Set<string> | 'all',
  views: SiteViews,
): Promise<void> {
  // A full pass looks at every site; a pass after a commit at the sites it concerns, at the
  // sites this process knows nothing of yet, and at those a previous pass had to leave.
  const asked = new Set(st.wanted);
  st.wanted.clear();
  const todo = scope === 'all' ? [...sites] : inOrder(scope, sites, st, asked);
  st.redo.clear();
  st.sealedSkips.clear();
  // Sites are independent (each append is a compare-and-set on that site's log alone), so
  // their appends go out together, pipelined on the log's connection, a bounded number at once.
  const queue = todo;
  const worker = async () => {
    for (let site = queue.shift(); site !== undefined; site = queue.shift())
      await projectSite(o, st, site, read, views);
  };
  await Promise.all(Array.from({ length: Math.min(appendsAtOnce, queue.length) }, worker));
  if (st.sealedSkips.size > 0)
    log('warn', 'fleet: the secret store is sealed, so secrets cannot be sealed for these sites; unseal it', {
      sites: [...st.sealedSkips].slice(0, 20).join(', '),
      count: st.sealedSkips.size,
    });
}

/**
 * A pass after commits: the sites they concern in `scope`'s order (the sites of the oldest
 * change first: a pass that folds the changes of the last half second serves first the sites
 * that waited longest, so a change waits at most about one pass, not two), then the others
 * it looks at.
 */
function inOrder(scope: ReadonlySet<string>, sites: ReadonlySet<string>, st: PassState, asked: ReadonlySet<string>) {
  const todo: string[] = [];
  for (const s of scope) if (sites.has(s)) todo.push(s);
  for (const s of sites) if (!scope.has(s) && (!st.known.has(s) || st.redo.has(s) || asked.has(s))) todo.push(s);
  return todo;
}

export const newPassState = (): PassState => ({
  known: new KnownLogs(),
  sealedSkips: new Set(),
  redo: new Set(),
  wanted: new Set(),
  readAll: false,
  again: false,
  againFull: false,
});
