/**
 * The projector: keeps every site's change log (log.ts) equal to what applies to it
 * (applicable.ts). After each configuration commit (store.onChange, from any process), at
 * start, and every `resyncMs` as a safety net, it reads the whole configuration at one
 * revision, computes each site's set, diffs it against the site's materialised set and appends
 * the difference as one entry (a compare-and-set on the site's head, see log.ts).
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
 */
import { etagOf } from '../store/etag.js';
import type { Store } from '../store/store.js';
import type { JsonObject } from '../lib/json.js';
import { log } from '../lib/log.js';
import type { Strongbox } from '../secrets/strongbox.js';
import { applicableTo, indexView, type ViewIndex } from './applicable.js';
import type { FleetChange, FleetLog } from './log.js';
import { isSecretKey, kidOf, recordedKeyOf, sealSecretFor, sentFingerprint, sourceFingerprint } from './sealing.js';

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
  /** Runs a pass now (or right after the running one) and resolves when it is done. */
  project(): Promise<void>;
  stop(): Promise<void>;
};

type Known = { version: string; rev: number; etags: Map<string, string> };

/** Sites projected at once in a pass (their appends in flight together). */
const appendsAtOnce = 64;

const siteKey = (root: string) => new RegExp(`^${root.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/sites/([^/]+)$`);

export function startProjector(o: ProjectorOptions): Projector {
  const now = o.now ?? Date.now;
  const known = new Map<string, Known>();
  const sitePattern = siteKey(o.root);
  let running: Promise<void> | undefined;
  let again = false;
  let stopped = false;
  let lastTrim = 0;
  const sealedSkips = new Set<string>();

  type Read = { rev: number; view: Map<string, JsonObject>; etags: Map<string, string>; index: ViewIndex };

  async function readConsistent(): Promise<Read | undefined> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const before = await o.store.revision();
      const entries = await o.store.list('');
      if ((await o.store.revision()) !== before) continue;
      const view = new Map(entries.map((e) => [e.key, e.value]));
      // The store's ETag is etagOf(value): computed once per object, not once per site.
      return { rev: before, view, etags: new Map(entries.map((e) => [e.key, e.etag])), index: indexView(view) };
    }
    return undefined;
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
          error: err instanceof Error ? err.message : String(err),
        });
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

  async function pass(): Promise<void> {
    // Most processes have no fleet: without sites (other than its own) there is nothing to read.
    const logged = await o.fleetLog.sites();
    // (Looked for only while no site has a log: afterwards the full read below finds them.)
    const named = async () =>
      (await o.store.list(`${o.root}/sites`)).some((e) => sitePattern.exec(e.key)?.[1] !== o.ownSite);
    if (logged.every((s) => s === o.ownSite) && !(await named())) return;
    const read = await readConsistent();
    if (!read) {
      again = true;
      return;
    }
    const sites = new Set(logged);
    for (const key of read.view.keys()) {
      const m = sitePattern.exec(key);
      if (m) sites.add(m[1]!);
    }
    sites.delete(o.ownSite);
    sealedSkips.clear();
    // Sites are independent (each append is a compare-and-set on that site's log alone), so
    // their appends go out together, pipelined on the log's connection, a bounded number at once.
    const queue = [...sites];
    const worker = async () => {
      for (let site = queue.shift(); site !== undefined; site = queue.shift()) await projectSite(site, read);
    };
    await Promise.all(Array.from({ length: Math.min(appendsAtOnce, queue.length) }, worker));
    if (sealedSkips.size > 0)
      log('warn', 'fleet: the secret store is sealed, so secrets cannot be sealed for these sites; unseal it', {
        sites: [...sealedSkips].slice(0, 20).join(', '),
        count: sealedSkips.size,
      });
    if (now() - lastTrim >= 60_000) {
      lastTrim = now();
      for (const site of sites) await o.fleetLog.trim(site, now() - o.historyMs);
    }
  }

  function project(): Promise<void> {
    if (stopped) return Promise.resolve();
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      let rounds = 0;
      do {
        again = false;
        try {
          await pass();
        } catch (err) {
          log('warn', 'fleet projection failed; retrying at the next change or resync', {
            error: err instanceof Error ? err.message : String(err),
          });
          return;
        }
      } while (again && !stopped && ++rounds < 20);
    })().finally(() => {
      running = undefined;
      // Stopped by the round limit with a change still unprojected: go on shortly, not at the next resync.
      if (again && !stopped) setTimeout(() => void project(), 50).unref();
    });
    return running;
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

  const unsubscribe = o.store.onChange(() => void project());
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
    },
  };
}
