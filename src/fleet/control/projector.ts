/**
 * The projector: keeps every site's change log (change-log.ts) equal to what applies to it
 * (applicable.ts). After each configuration commit (store.onChange, from any process), at
 * start, and every `resyncMs` as a safety net (then for an eighth of the sites in turn), it
 * reads the whole configuration at one revision, computes each site's set, diffs it against
 * the site's materialised set and appends the difference as one entry (a compare-and-set on
 * the site's head, see change-log.ts).
 *
 * Why not append inside the configuration commit: what applies to a site depends on objects a
 * commit does not touch (every site's labels, every deployment), so an in-commit append would
 * have to read and guard the whole fleet's configuration in every commit, and one change of a
 * label expression would make one Lua call write to thousands of streams while Redis serves
 * no one else. The projector is level-triggered instead (like a Kubernetes controller): it
 * cannot lose a change, because every pass compares the whole current configuration with
 * each site's materialised set, and passes run after every commit, at every start (a crash
 * between a commit and its projection is repaired by the next start of any control-plane
 * process) and periodically; it cannot invent one, because it only projects a configuration
 * read at a single revision (the commit counter is the same before and after the read) and
 * each entry is the exact difference between two such projections. Commits made in the same
 * instant may be folded into one entry: a site sees every resulting state, not every
 * intermediate one.
 *
 * What a pass costs: it reads only the objects whose ETag moved since the previous pass (the
 * ETags of what changed since are read in one step with their revision; a full pass compares
 * every ETag), and after a commit it recomputes
 * only the sites that commit concerns (a site object: that site; a webhook exporter: where it
 * is placed and where it was; anything else: every site). At start and when a caller asks
 * (project()), a pass recomputes every site; every `resyncMs`, a pass compares every ETag and
 * recomputes one eighth of the sites, so each within eight periods.
 */
import { etagOf } from '../../store/etag.js';
import type { Store } from '../../store/store.js';
import { snapshotReader, type Snapshot } from '../../store/snapshot.js';
import type { JsonObject } from '../../lib/json.js';
import { log } from '../../lib/log.js';
import type { Strongbox } from '../../secrets/strongbox.js';
import { site as siteResource } from '../../resources/site.js';
import { webhook } from '../../resources/webhook/index.js';
import { applicableTo, indexView, reindexView, webhookPlacement, type ViewIndex } from './applicable.js';
import { createSiteLabelIndex, type SiteLabelIndex } from './site-labels.js';
import type { FleetChange } from '../common/protocol.js';
import type { FleetLog } from './change-log.js';
import { createPassScheduler } from './pass-scheduler.js';
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

export type Projector = {
  /** Runs a pass over every site now (or right after the running one) and resolves when it is done. */
  project(): Promise<void>;
  /**
   * Runs a pass that projects `site` (and what commits concern) and resolves when it is done:
   * after the site presented a new key, so that its secrets are sealed for it. Not a pass over
   * every site: 10,000 sites connecting for the first time would otherwise each wait for one.
   */
  projectSite(site: string): Promise<void>;
  stop(): Promise<void>;
};

/** The whole configuration at one revision, as a pass reads it. */
type Read = {
  rev: number;
  view: ReadonlyMap<string, JsonObject>;
  etags: ReadonlyMap<string, string>;
  index: ViewIndex;
};

/** The periodic resync projects one of this many slices of the sites in turn (see resync). */
const resyncSlices = 8;

/** The resync slice of `site`: a hash of its name. */
function sliceOf(site: string): number {
  let h = 0;
  for (let i = 0; i < site.length; i++) h = (Math.imul(h, 31) + site.charCodeAt(i)) | 0;
  return (h >>> 0) % resyncSlices;
}

/** Sites projected at once in a pass (their appends in flight together). */
const appendsAtOnce = 256;
/** Logs trimmed at once (a few, so trims never crowd out the appends of a pass). */
const trimsAtOnce = 8;

/**
 * The sites whose set a change of `changed` may alter, or 'all'. A site object concerns its
 * own site only (its labels place exporters there, for every tenant); a webhook exporter
 * concerns the sites that hold it and those where it is placed now (its placement evaluated
 * at the candidates the label index gives, not at every site); anything else (settings,
 * users, deployments, vaults, tenants...) may concern any site.
 */
function concerned(
  read: Read,
  changed: ReadonlySet<string>,
  sites: Set<string>,
  known: KnownLogs,
  labels: SiteLabelIndex,
): Set<string> | 'all' {
  const out = new Set<string>();
  for (const key of changed) {
    const named = siteResource.parseKey(key)?.name;
    if (named !== undefined) {
      out.add(named);
      continue;
    }
    const w = webhook.parseKey(key);
    if (!w) return 'all';
    for (const s of known.holdersOf(key)) if (sites.has(s)) out.add(s);
    const placed = webhookPlacement(read.view, read.index, key);
    const candidates = labels.candidates(w.tenant, read.view.get(key)?.['site-placement']);
    for (const s of candidates ?? sites) if (sites.has(s) && placed(s)) out.add(s);
  }
  return out;
}

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

/**
 * Drops history older than `cutoff` from the logs of `sites`, beside the passes (a trim of a thousand logs takes as
 * long as a thousand round trips: inside a pass it would hold up every change behind it).
 * Each trim is atomic on its own log, so it can run while appends go on.
 */
async function trimLogs(fleetLog: FleetLog, sites: string[], cutoff: number, stopped: () => boolean): Promise<void> {
  const worker = async () => {
    for (let site = sites.shift(); site !== undefined && !stopped(); site = sites.shift())
      await fleetLog.trim(site, cutoff);
  };
  try {
    await Promise.all(Array.from({ length: Math.min(trimsAtOnce, sites.length) }, worker));
  } catch (err) {
    log('warn', 'fleet: trimming the change logs failed; trying again in a minute', {
      error: errorText(err),
    });
  }
}

/** What a projector keeps between passes. */
interface PassState {
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

async function knownOf(o: ProjectorOptions, st: PassState, site: string): Promise<Known> {
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
async function projectSites(
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
  const todo =
    scope === 'all'
      ? [...sites]
      : [...sites].filter((s) => scope.has(s) || !st.known.has(s) || st.redo.has(s) || asked.has(s));
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

/** The name of the root tenant's site whose object is at `key`, if it is one. */
function rootSiteAt(root: string, key: string): string | undefined {
  const p = siteResource.parseKey(key);
  return p?.tenant === root ? p.name : undefined;
}

/** The sites to project: those with a log and those named in the configuration, other than this process's own. */
function sitesOf(o: ProjectorOptions, logged: readonly string[], labels: SiteLabelIndex): Set<string> {
  const sites = new Set(logged);
  for (const s of labels.sitesOf(o.root)) sites.add(s);
  sites.delete(o.ownSite);
  return sites;
}

/**
 * Whether there is a fleet: a site other than this process's own with a log, or named in the
 * configuration (looked for only while no site has a log: afterwards the full read finds them).
 */
async function isFleet(o: ProjectorOptions, logged: readonly string[]): Promise<boolean> {
  if (logged.some((s) => s !== o.ownSite)) return true;
  return (await o.store.list(siteResource.keyOf(o.root))).some((e) => rootSiteAt(o.root, e.key) !== o.ownSite);
}

/**
 * A pass's Read of `snap`, with the label index and the view's index brought up from the
 * previous read by what changed since: a commit is not a scan of every site.
 */
function readOf(snap: Snapshot, prev: Read | undefined, labels: SiteLabelIndex): Read {
  labels.update(snap.values, snap.changed);
  const index = (prev && reindexView(prev.index, snap.values, snap.changed)) ?? indexView(snap.values);
  return { rev: snap.revision, view: snap.values, etags: snap.etags, index };
}

/** Whether a commit of `key` can make a fleet: it names a root site other than this process's own. */
function mayMakeFleet(o: ProjectorOptions, key: string): boolean {
  const s = rootSiteAt(o.root, key);
  return s !== undefined && s !== o.ownSite;
}

const newPassState = (): PassState => ({
  known: new KnownLogs(),
  sealedSkips: new Set(),
  redo: new Set(),
  wanted: new Set(),
  readAll: false,
  again: false,
  againFull: false,
});

/**
 * The whole configuration at one revision, and what changed since the previous read (the
 * reader reads only what changed since); `labels` is brought up to date from the same changes.
 */
function viewReader(
  store: ProjectorOptions['store'],
  labels: SiteLabelIndex,
): (full: boolean) => Promise<{ read: Read; changed: ReadonlySet<string> } | undefined> {
  const reader = snapshotReader(store);
  let last: Read | undefined;
  return async (full) => {
    const snap = await reader.read({ full });
    if (!snap) return undefined;
    if (last?.rev !== snap.revision) last = readOf(snap, last, labels);
    return { read: last, changed: snap.changed };
  };
}

/** Trims the sites' logs of entries older than the history, at most once a minute, one trim at a time. */
function logTrimmer(o: ProjectorOptions, now: () => number, stopped: () => boolean) {
  let lastTrim = 0;
  let trimming: Promise<void> | undefined;
  return {
    maybeTrim(sites: ReadonlySet<string>): void {
      if (now() - lastTrim < 60_000 || trimming) return;
      lastTrim = now();
      trimming = trimLogs(o.fleetLog, [...sites], now() - o.historyMs, stopped).finally(() => (trimming = undefined));
    },
    done: () => trimming,
  };
}

/**
 * The periodic resync: forgets what this process knows of the sites whose log another process
 * appended to (the next pass projects them again), and has the next pass read every ETag and
 * project one slice of the sites in turn: every site within `resyncSlices` resyncs. A pass over
 * every site took ~1 s at 10,000 sites, and every change waited behind it. Before the first
 * pass read the sites with a log, it asks for a full pass.
 */
function resyncer(
  o: ProjectorOptions,
  st: PassState,
  labels: SiteLabelIndex,
  logged: () => readonly string[] | undefined,
  scheduler: ReturnType<typeof createPassScheduler>,
): () => Promise<void> {
  let resyncs = 0;
  return async () => {
    const sites = st.known.sites();
    try {
      const heads = await o.fleetLog.heads(sites);
      for (const site of sites) if (heads.get(site) !== st.known.get(site)?.version) st.known.delete(site);
    } catch {
      st.known.clear();
    }
    const withLog = logged();
    if (!withLog) return scheduler.request(true);
    const slice = resyncs++ % resyncSlices;
    for (const site of sitesOf(o, withLog, labels)) if (sliceOf(site) === slice) st.wanted.add(site);
    st.readAll = true;
    await scheduler.request(false);
  };
}

export function startProjector(o: ProjectorOptions): Projector {
  const now = o.now ?? Date.now;
  const st = newPassState();
  /**
   * The last pass found no fleet (no site but this process's own, named or with a log). Until a
   * commit names a site, commits start no pass: every log is made for a site named in the
   * configuration, so only such a commit can make a fleet (the periodic full pass still runs).
   */
  let fleetless = false;
  /** Its site objects by label, updated with what each read finds changed. */
  const labels = createSiteLabelIndex();
  const readView = viewReader(o.store, labels);
  const scheduler = createPassScheduler(async (full) => {
    st.again = false;
    st.againFull = false;
    await pass(full);
    return st.againFull ? 'again-full' : st.again ? 'again' : 'done';
  });
  const project = (full = true) => scheduler.request(full);
  const trimmer = logTrimmer(o, now, () => scheduler.stopped);

  /**
   * The sites with a log, read by each full pass (at start, on request), after each resync and by
   * the first: at 10,000 sites the set is a read of 10,000 names, and a pass after a commit
   * needs from it only the sites no longer in the configuration, which the commit that deleted
   * them names (added below) or which the last full pass read.
   */
  let logged: string[] | undefined;

  async function pass(full: boolean): Promise<void> {
    const readAll = full || st.readAll;
    st.readAll = false;
    // Most processes have no fleet: without sites (other than its own) there is nothing to read.
    if (readAll || !logged || fleetless) logged = await o.fleetLog.sites();
    fleetless = !(await isFleet(o, logged));
    if (fleetless) return;
    const got = await readView(readAll);
    if (!got) {
      st.again = true;
      if (full) st.againFull = true;
      return;
    }
    const { read, changed } = got;
    const sites = sitesOf(o, logged, labels);
    // A site deleted since the last full pass may have a log it read: its log must empty.
    if (!full)
      for (const key of changed) {
        const deleted = rootSiteAt(o.root, key);
        if (deleted !== undefined && deleted !== o.ownSite) sites.add(deleted);
      }
    const views: SiteViews = o.rollouts
      ? await o.rollouts.prepare({
          ...read,
          sites,
          holds: async (site, key) => (await knownOf(o, st, site)).etags.has(key),
        })
      : () => undefined;
    await projectSites(o, st, sites, read, full ? 'all' : concerned(read, changed, sites, st.known, labels), views);
    trimmer.maybeTrim(sites);
  }

  const resync = resyncer(o, st, labels, () => logged, scheduler);

  const unsubscribe = o.store.onChange((keys) => {
    if (fleetless && !keys.some((key) => mayMakeFleet(o, key))) return;
    void project(false);
  });
  const timer = setInterval(() => void resync(), o.resyncMs ?? 10_000);
  timer.unref();
  void project();
  o.rollouts?.start(() => project());

  return {
    project,
    projectSite(site) {
      st.wanted.add(site);
      return scheduler.request(false);
    },
    async stop() {
      clearInterval(timer);
      unsubscribe();
      await o.rollouts?.stop();
      await scheduler.stop();
      await trimmer.done();
    },
  };
}
