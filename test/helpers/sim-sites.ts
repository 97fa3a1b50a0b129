/**
 * Many edge sites in one process of their own (the failover test's connected sites): each runs
 * the real site sync loop (src/fleet/site/sync-loop.ts, as scripts/fleet-bench/site-process.ts
 * does for bench:fleet) and applies what it receives to a copy in memory instead of a store of
 * its own, so a hundred sites cost one Node process, not a hundred. Each records every snapshot
 * and entry it applied, in order, and counts the entries it was sent again (at or below its
 * version: skipped, as the real store target skips them). A `site=` read sent down a stream is
 * answered with `{"answeredBy": <site>, "path"}`, so a test sees the relay work.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** What one simulated site holds and did. */
export type SimSite = {
  site: string;
  /** The version applied last (undefined: never synced). */
  version: string | undefined;
  /** The objects it holds, by store key. */
  objects: Record<string, unknown>;
  /** What it applied, in order: a snapshot or a change, with its version. */
  applied: Array<['snapshot' | 'change', string]>;
  /** Entries it received again at or below its version (skipped, not applied). */
  skipped: number;
  connected: boolean;
};

export type SimSites = {
  /** Every site's state now. */
  dump(): Promise<SimSite[]>;
  stop(): Promise<void>;
};

type ToChild = { type: 'dump' | 'stop'; rid: number };
type Start = { url: string; sites: Array<{ site: string; token: string }> };

/** Starts `sites` against the control plane at `url`, in a process of their own. */
export async function startSimSites(url: string, sites: Array<{ site: string; token: string }>): Promise<SimSites> {
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), ['--sim-sites'], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, LOG_LEVEL: 'error' },
  });
  let rid = 0;
  const waiting = new Map<number, (m: unknown) => void>();
  child.on('message', (m: { rid?: number }) => {
    if (m.rid !== undefined) waiting.get(m.rid)?.(m);
    waiting.delete(m.rid ?? -1);
  });
  const exited = new Promise<never>((_, reject) =>
    child.once('exit', (code) => reject(new Error(`the simulated sites' process exited (${code})`))),
  );
  exited.catch(() => undefined);
  const ask = <T>(type: ToChild['type']): Promise<T> =>
    Promise.race([
      new Promise<T>((resolve) => {
        const id = ++rid;
        waiting.set(id, resolve as (m: unknown) => void);
        child.send({ type, rid: id } satisfies ToChild);
      }),
      exited,
    ]);
  await Promise.race([new Promise((r) => child.once('message', r)), exited]); // ready
  child.send({ url, sites } satisfies Start);
  await Promise.race([new Promise((r) => child.once('message', r)), exited]); // started
  return {
    dump: async () => (await ask<{ sites: SimSite[] }>('dump')).sites,
    async stop() {
      if (child.exitCode !== null) return;
      await ask('stop').catch(() => undefined);
      child.kill('SIGKILL');
    },
  };
}

async function child(): Promise<void> {
  const { startSiteSync } = await import('../../src/fleet/site/sync-loop.js');
  const { generateSiteKey } = await import('../../src/secrets/sealed.js');
  const { compareVersions } = await import('../../src/fleet/common/protocol.js');
  (await import('../../src/lib/log.js')).setLogLevel('error'); // a failover makes every site warn
  type Sim = Omit<SimSite, 'objects' | 'connected'> & { objects: Map<string, unknown> };
  const sims: Array<{ sim: Sim; sync: ReturnType<typeof startSiteSync> }> = [];
  const start = (m: Start) => {
    for (const { site, token } of m.sites) {
      const sim: Sim = { site, version: undefined, objects: new Map(), applied: [], skipped: 0 };
      const { publicKey } = generateSiteKey();
      const sync = startSiteSync({
        url: m.url,
        site,
        token,
        publicKey: () => Promise.resolve(publicKey),
        target: {
          load: () => Promise.resolve(sim.version),
          async applyEntry(version, changes) {
            if (sim.version !== undefined && compareVersions(version, sim.version) <= 0) {
              if (changes.length > 0) sim.skipped++; // (a bookmark of where it is is no change)
              return false;
            }
            for (const c of changes) {
              if (c.op === 'put') sim.objects.set(c.key, c.value);
              else sim.objects.delete(c.key);
            }
            sim.version = version;
            // A bookmark is recorded like an empty entry: not an application of a change.
            if (changes.length > 0) sim.applied.push(['change', version]);
            return true;
          },
          async applySnapshot(version, objects) {
            sim.objects = new Map(objects);
            sim.version = version;
            sim.applied.push(['snapshot', version]);
          },
        },
        hooks: {
          read: async (read) => ({ status: 200, body: { answeredBy: site, path: read.path } }),
          report: async () => ({}),
          onChange: () => () => undefined,
        },
      });
      sims.push({ sim, sync });
    }
  };
  process.on('message', (m: ToChild | Start) => {
    if ('url' in m) {
      start(m);
      process.send!({ started: true });
    } else if (m.type === 'dump') {
      const sites: SimSite[] = sims.map(({ sim, sync }) => ({
        ...sim,
        objects: Object.fromEntries(sim.objects),
        connected: sync.connected(),
      }));
      process.send!({ rid: m.rid, sites });
    } else if (m.type === 'stop') {
      void Promise.all(sims.map((s) => s.sync.stop())).then(() => process.send!({ rid: m.rid }));
    }
  });
  process.send!({ ready: true });
}

if (process.argv.includes('--sim-sites')) void child();
