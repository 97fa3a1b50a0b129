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
import { applicableTo } from './applicable.js';
import type { FleetChange, FleetLog } from './log.js';

export type ProjectorOptions = {
  store: Store;
  fleetLog: FleetLog;
  root: string;
  /** The control plane's own site: it runs from the configuration itself, without a log. */
  ownSite: string;
  historyMs: number;
  resyncMs?: number;
  now?: () => number;
};

export type Projector = {
  /** Runs a pass now (or right after the running one) and resolves when it is done. */
  project(): Promise<void>;
  stop(): Promise<void>;
};

type Known = { version: string; rev: number; etags: Map<string, string> };

const siteKey = (root: string) => new RegExp(`^${root.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/sites/([^/]+)$`);

export function startProjector(o: ProjectorOptions): Projector {
  const now = o.now ?? Date.now;
  const known = new Map<string, Known>();
  const sitePattern = siteKey(o.root);
  let running: Promise<void> | undefined;
  let again = false;
  let stopped = false;
  let lastTrim = 0;

  async function readConsistent(): Promise<{ rev: number; view: Map<string, JsonObject> } | undefined> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const before = await o.store.revision();
      const entries = await o.store.list('');
      if ((await o.store.revision()) !== before) continue;
      return { rev: before, view: new Map(entries.map((e) => [e.key, e.value])) };
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
        etags: new Map([...snap.objects].map(([key, v]) => [key, etagOf(v)])),
      };
      known.set(site, k);
    }
    return k;
  }

  async function projectSite(site: string, rev: number, view: Map<string, JsonObject>): Promise<void> {
    const k = await knownOf(site);
    if (k.rev > rev) return; // another process already projected a newer configuration
    // A site whose object was deleted receives nothing more: its synced set empties.
    const desired = view.has(`${o.root}/sites/${site}`)
      ? applicableTo(view, site, o.root)
      : new Map<string, JsonObject>();
    const changes: FleetChange[] = [];
    const etags = new Map<string, string>();
    for (const [key, value] of desired) {
      const etag = etagOf(value);
      etags.set(key, etag);
      if (k.etags.get(key) !== etag) changes.push({ op: 'put', key, value });
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
    const named = (await o.store.list(`${o.root}/sites`)).some((e) => sitePattern.exec(e.key)?.[1] !== o.ownSite);
    if (!named && logged.every((s) => s === o.ownSite)) return;
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
    for (const site of sites) await projectSite(site, read.rev, read.view);
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
    });
    return running;
  }

  const unsubscribe = o.store.onChange(() => void project());
  const timer = setInterval(() => {
    known.clear(); // also picks up appends this process did not see
    void project();
  }, o.resyncMs ?? 10_000);
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
