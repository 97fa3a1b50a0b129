/**
 * The projector: keeps every site's change log (change-log.ts) equal to what applies to it
 * (applicable.ts). After each configuration commit (store.onChange, from any process), at
 * start, and every `resyncMs` as a safety net, it reads the whole configuration at one
 * revision, computes each site's set, diffs it against the site's materialised set and appends
 * the difference as one entry (a compare-and-set on the site's head, see change-log.ts).
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
 * store's ETags are read in one step with their revision), and after a commit it recomputes
 * only the sites that commit concerns (a site object: that site; a webhook exporter: where it
 * is placed and where it was; anything else: every site). Every `resyncMs`, at start and when
 * a caller asks (project()), a pass recomputes every site.
 */
import { etagOf } from '../../store/etag.js';
import type { Store } from '../../store/store.js';
import { snapshotReader } from '../../store/snapshot.js';
import type { JsonObject } from '../../lib/json.js';
import { log } from '../../lib/log.js';
import type { Strongbox } from '../../secrets/strongbox.js';
import { applicableTo, indexView, webhookPlacement, type ViewIndex } from './applicable.js';
import type { FleetChange } from '../common/protocol.js';
import type { FleetLog } from './change-log.js';
import { isSecretKey, kidOf, recordedKeyOf, sealSecretFor, sentFingerprint, sourceFingerprint } from './sealing.js';
import { errorText } from '../../lib/error-text.js';

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
};

export type Projector = {
  /** Runs a pass over every site now (or right after the running one) and resolves when it is done. */
  project(): Promise<void>;
  stop(): Promise<void>;
};

type Known = { version: string; rev: number; etags: Map<string, string> };

/** Sites projected at once in a pass (their appends in flight together). */
const appendsAtOnce = 64;
/** Logs trimmed at once (a few, so trims never crowd out the appends of a pass). */
const trimsAtOnce = 8;

const anySiteKey = /^([^/]+)\/sites\/([^/]+)$/;
const webhookKey = /^[^/]+\/volga\/webhooks\/[^/]+$/;

const siteKey = (root: string) => new RegExp(`^${root.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/sites/([^/]+)$`);

export function startProjector(o: ProjectorOptions): Projector {
  const now = o.now ?? Date.now;
  const known = new Map<string, Known>();
  const sitePattern = siteKey(o.root);
  let running: Promise<void> | undefined;
  /** Set by a pass that needs another (a lost compare-and-set, no read at one revision). */
  let again = false;
  let requested = 0;
  const waiters: Array<{ ticket: number; resolve: () => void }> = [];
  let stopped = false;
  let lastTrim = 0;
  let trimming: Promise<void> | undefined;
  const sealedSkips = new Set<string>();
  /** Sites a pass left as they were (their secrets could not be sealed): the next pass looks again. */
  const redo = new Set<string>();
  /** The configuration as the last pass read it (the reader reads only what changed since). */
  let last: Read | undefined;
  const reader = snapshotReader(o.store);
  let wantFull = true;

  type Read = {
    rev: number;
    view: ReadonlyMap<string, JsonObject>;
    etags: ReadonlyMap<string, string>;
    index: ViewIndex;
  };

  /** The whole configuration at one revision, and what changed since the previous pass. */
  async function readView(): Promise<{ read: Read; changed: ReadonlySet<string> } | undefined> {
    const snap = await reader.read();
    if (!snap) return undefined;
    if (last?.rev !== snap.revision)
      last = { rev: snap.revision, view: snap.values, etags: snap.etags, index: indexView(snap.values) };
    return { read: last, changed: snap.changed };
  }

  /**
   * The sites whose set a change of `changed` may alter, or 'all'. A site object concerns its
   * own site only (its labels place exporters there, for every tenant); a webhook exporter
   * concerns the sites that hold it and those where it is placed now; anything else (settings,
   * users, deployments, vaults, tenants...) may concern any site.
   */
  function concerned(read: Read, changed: ReadonlySet<string>, sites: Set<string>): Set<string> | 'all' {
    const out = new Set<string>();
    for (const key of changed) {
      const site = anySiteKey.exec(key)?.[2];
      if (site !== undefined) {
        out.add(site);
        continue;
      }
      if (!webhookKey.test(key)) return 'all';
      const placed = webhookPlacement(read.view, read.index, key);
      for (const s of sites) if (known.get(s)?.etags.has(key) || placed(s)) out.add(s);
    }
    return out;
  }

  async function knownOf(site: string): Promise<Known> {
    let k = known.get(site);
    if (!k) {
      const snap = await o.fleetLog.snapshot(site);
      k = {
        version: snap.version,
        rev: snap.rev,
        etags: new Map([...snap.objects].map(([key, v]) => [key, etagOf(isSecretKey(key) ? sentFingerprint(v) : v)])),
      };
      known.set(site, k);
    }
    return k;
  }

  async function projectSite(site: string, read: Read): Promise<void> {
    const { rev, view } = read;
    const k = await knownOf(site);
    if (k.rev > rev) return; // another process already projected a newer configuration
    // A site whose object was deleted receives nothing more: its synced set empties.
    const desired = view.has(`${o.root}/sites/${site}`)
      ? applicableTo(view, site, o.root, read.index)
      : new Map<string, JsonObject>();
    const changes: FleetChange[] = [];
    const etags = new Map<string, string>();
    let publicKey: string | undefined;
    let keyRead = false;
    for (const [key, value] of desired) {
      if (!isSecretKey(key)) {
        // The store's ETag when the site gets the stored object itself (not a copy made for it).
        const etag = (view.get(key) === value ? read.etags.get(key) : undefined) ?? etagOf(value);
        etags.set(key, etag);
        if (k.etags.get(key) !== etag) changes.push({ op: 'put', key, value });
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
      if (k.etags.get(key) === etag) {
        etags.set(key, etag);
        continue;
      }
      if (o.strongbox.sealed) {
        sealedSkips.add(site);
        redo.add(site);
        return;
      }
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
        redo.add(site);
        return;
      }
      etags.set(key, etag);
      changes.push({ op: 'put', key, value: sealed });
    }
    for (const key of k.etags.keys()) if (!desired.has(key)) changes.push({ op: 'delete', key });
    if (changes.length === 0) return;
    const version = await o.fleetLog.append(site, k.version, rev, changes);
    if (version === undefined) {
      // Another process appended first: forget what we knew and look again.
      known.delete(site);
      again = true;
      return;
    }
    known.set(site, { version, rev, etags });
  }

  async function pass(full: boolean): Promise<void> {
    // Most processes have no fleet: without sites (other than its own) there is nothing to read.
    const logged = await o.fleetLog.sites();
    // (Looked for only while no site has a log: afterwards the full read below finds them.)
    const named = async () =>
      (await o.store.list(`${o.root}/sites`)).some((e) => sitePattern.exec(e.key)?.[1] !== o.ownSite);
    if (logged.every((s) => s === o.ownSite) && !(await named())) return;
    const got = await readView();
    if (!got) {
      again = true;
      if (full) wantFull = true;
      return;
    }
    const { read, changed } = got;
    const sites = new Set(logged);
    for (const key of read.view.keys()) {
      const m = sitePattern.exec(key);
      if (m) sites.add(m[1]!);
    }
    sites.delete(o.ownSite);
    // A full pass looks at every site; a pass after a commit at the sites it concerns, at the
    // sites this process knows nothing of yet, and at those a previous pass had to leave.
    const scope = full ? 'all' : concerned(read, changed, sites);
    const todo = scope === 'all' ? [...sites] : [...sites].filter((s) => scope.has(s) || !known.has(s) || redo.has(s));
    redo.clear();
    sealedSkips.clear();
    // Sites are independent (each append is a compare-and-set on that site's log alone), so
    // their appends go out together, pipelined on the log's connection, a bounded number at once.
    const queue = todo;
    const worker = async () => {
      for (let site = queue.shift(); site !== undefined; site = queue.shift()) await projectSite(site, read);
    };
    await Promise.all(Array.from({ length: Math.min(appendsAtOnce, queue.length) }, worker));
    if (sealedSkips.size > 0)
      log('warn', 'fleet: the secret store is sealed, so secrets cannot be sealed for these sites; unseal it', {
        sites: [...sealedSkips].slice(0, 20).join(', '),
        count: sealedSkips.size,
      });
    if (now() - lastTrim >= 60_000 && !trimming) {
      lastTrim = now();
      trimming = trimLogs([...sites]).finally(() => (trimming = undefined));
    }
  }

  /**
   * Drops history older than historyMs, beside the passes (a trim of a thousand logs takes as
   * long as a thousand round trips: inside a pass it would hold up every change behind it).
   * Each trim is atomic on its own log, so it can run while appends go on.
   */
  async function trimLogs(sites: string[]): Promise<void> {
    const cutoff = now() - o.historyMs;
    const worker = async () => {
      for (let site = sites.shift(); site !== undefined && !stopped; site = sites.shift())
        await o.fleetLog.trim(site, cutoff);
    };
    try {
      await Promise.all(Array.from({ length: Math.min(trimsAtOnce, sites.length) }, worker));
    } catch (err) {
      log('warn', 'fleet: trimming the change logs failed; trying again in a minute', {
        error: errorText(err),
      });
    }
  }

  /**
   * Asks for a pass; resolves once a pass that started after the call has finished (a call
   * while one runs is served by the next, which every call made meanwhile shares).
   * `full`: look at every site (else only at those the commits since the last pass concern).
   */
  function project(full = true): Promise<void> {
    if (stopped) return Promise.resolve();
    if (full) wantFull = true;
    const ticket = ++requested;
    const done = new Promise<void>((resolve) => waiters.push({ ticket, resolve }));
    if (!running) running = drain().finally(() => (running = undefined));
    return done;
  }

  function settle(upTo: number): void {
    for (let i = waiters.length - 1; i >= 0; i--) if (waiters[i]!.ticket <= upTo) waiters.splice(i, 1)[0]!.resolve();
  }

  async function drain(): Promise<void> {
    for (let rounds = 0; waiters.length > 0 && !stopped; rounds++) {
      if (rounds >= 20) {
        // Twenty passes in a row each asking for another: go on shortly, not in a tight loop.
        setTimeout(() => void (running ??= drain().finally(() => (running = undefined))), 50).unref();
        return;
      }
      const upTo = requested;
      again = false;
      const f = wantFull;
      wantFull = false;
      try {
        await pass(f);
      } catch (err) {
        wantFull = true;
        log('warn', 'fleet projection failed; retrying at the next change or resync', {
          error: errorText(err),
        });
        settle(Infinity); // every caller hears of it now; the next change or resync tries again
        return;
      }
      // A pass that lost a race or could not read at one revision asks for another first.
      if (!again) settle(upTo);
    }
  }

  /** Forgets what this process knows of the sites whose log another process appended to. */
  async function resync(): Promise<void> {
    const sites = [...known.keys()];
    try {
      const heads = await o.fleetLog.heads(sites);
      for (const site of sites) if (heads.get(site) !== known.get(site)?.version) known.delete(site);
    } catch {
      known.clear();
    }
    await project();
  }

  const unsubscribe = o.store.onChange(() => void project(false));
  const timer = setInterval(() => void resync(), o.resyncMs ?? 10_000);
  timer.unref();
  void project();

  return {
    project,
    async stop() {
      stopped = true;
      clearInterval(timer);
      unsubscribe();
      await running;
      await trimming;
      settle(Infinity);
    },
  };
}
