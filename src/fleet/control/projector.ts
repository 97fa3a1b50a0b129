/**
 * The projector: keeps every site's change log (change-log.ts) equal to what applies to it
 * (applicable.ts). After each configuration commit (store.onChange, from any process), at
 * start, and every `resyncMs` as a safety net (then for an eighth of the sites in turn), it
 * reads the whole configuration at one revision, computes each site's set, diffs it against
 * the site's materialised set and appends the difference as one entry (a compare-and-set on
 * the site's head, see change-log.ts). This file decides when a pass runs and which sites it
 * looks at; the work at each site is site-projection.ts.
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
 * (project()), a pass recomputes every site; every `resyncMs`, a pass recomputes one eighth of
 * the sites, so each within eight periods, and every sixth period it compares every ETag.
 */
import { snapshotReader, type Snapshot } from '../../store/snapshot.js';
import { log } from '../../lib/log.js';
import { site as siteResource } from '../../resources/site.js';
import { webhook } from '../../resources/webhook/index.js';
import { indexView, reindexView, webhookPlacement } from './applicable.js';
import { createSiteLabelIndex, type SiteLabelIndex } from './site-labels.js';
import type { FleetLog } from './change-log.js';
import { createPassScheduler } from './pass-scheduler.js';
import { errorText } from '../../lib/error-text.js';
import type { SiteViews } from './rollouts.js';
import type { KnownLogs } from './known-logs.js';
import {
  knownOf,
  newPassState,
  projectSites,
  type PassState,
  type ProjectorOptions,
  type Read,
} from './site-projection.js';

export type { ProjectorOptions };

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

/** The periodic resync projects one of this many slices of the sites in turn (see resync). */
const resyncSlices = 8;
/** Every this many resyncs, the pass after one reads every ETag (see resyncer). */
const fullReadEvery = 6;
/** Sites whose log heads a resync reads in one round trip. */
const headsAtOnce = 500;

/** The resync slice of `site`: a hash of its name. */
function sliceOf(site: string): number {
  let h = 0;
  for (let i = 0; i < site.length; i++) h = (Math.imul(h, 31) + site.charCodeAt(i)) | 0;
  return (h >>> 0) % resyncSlices;
}

/** Logs trimmed at once (a few, so trims never crowd out the appends of a pass). */
const trimsAtOnce = 8;

/**
 * The sites whose set a change of `changed` may alter, or 'all'. A site object concerns its
 * own site only (its labels place exporters there, for every tenant); a webhook exporter
 * concerns the sites that hold it and those where it is placed now (its placement evaluated
 * at the candidates the label index gives, not at every site); anything else (settings,
 * users, deployments, vaults, tenants...) may concern any site. In the order of `changed` (the
 * commits', oldest first): the pass serves the sites of the oldest change first.
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
 * appended to (the next pass projects them again), and has the next pass project one slice of
 * the sites in turn: every site within `resyncSlices` resyncs. A pass over every site took ~1 s
 * at 10,000 sites, and every change waited behind it. Every `fullReadEvery`-th resync (the
 * first included), that pass also reads every ETag and the set of sites with a log, not only
 * what changed since: a change written behind the store's back is found within that many
 * periods (at 10,000 objects the read of every ETag is ~40 ms of Redis, which every change
 * behind it waited for, every period). Before the first pass read the sites with a log, it
 * asks for a full pass.
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
      // A chunk at a time: 10,000 heads read at once (on Cluster one HGET each) held the event
      // loop, and every change waiting on it, for a few hundred milliseconds.
      for (let i = 0; i < sites.length; i += headsAtOnce) {
        const chunk = sites.slice(i, i + headsAtOnce);
        const heads = await o.fleetLog.heads(chunk);
        for (const site of chunk) if (heads.get(site) !== st.known.get(site)?.version) st.known.delete(site);
      }
    } catch {
      st.known.clear();
    }
    const withLog = logged();
    if (!withLog) return scheduler.request(true);
    if (resyncs % fullReadEvery === 0) st.readAll = true;
    const slice = resyncs++ % resyncSlices;
    for (const site of sitesOf(o, withLog, labels)) if (sliceOf(site) === slice) st.wanted.add(site);
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
