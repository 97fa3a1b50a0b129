/**
 * `npm run bench:fleet`: control-plane processes and BENCH_SITES (default 1,000) edge sites, as
 * users run them. Each control plane is the built bundle (`npm run build` → `node
 * build/edgeplane.cjs`) in its own process; BENCH_CPS (default 1) of them share one Redis
 * deployment (BENCH_REDIS: `standalone`, a private redis-server, or `sentinel`) and the sites
 * (site i connects to process i mod BENCH_CPS). The sites are simulated in BENCH_PROCS child
 * processes (default one per 2,500 sites, at least 3), each site running the real sync loop
 * (src/fleet/site/sync-loop.ts: its SSE client, reconnection back-off and acknowledgements) and
 * applying what it receives to a copy in memory (a SyncTarget) instead of a store. Site tokens
 * are issued through the API.
 *
 * Every write carries a marker (`w<n>`: in an exporter's url, in a site's `bench-w` label); the
 * bench knows which sites each write concerns (the labels it gave them) and tells their
 * processes before it writes; a site process notes when each concerned site has applied it
 * (the marker arrived, or the exporter left the site). Latency runs from sending the write to
 * that apply (so it includes the API's own commit).
 *
 * Phases (fleet-bench/phases.ts, one function each, run in this order by main below):
 *   1. baselines: a raw Redis XADD → XREAD BLOCK round trip, and the same commit → applied path
 *      with one site (the first, alone in the configuration), BENCH_BASE_WRITES writes at 20/s;
 *   2. fleet: the other sites (labels region r0..r9, group g0..g49) and 40 exporters placed by
 *      `group=` / `region=` are created, every site connects; control-plane memory per site;
 *   3. allSites: one change to every site (an exporter placed on all sites), BENCH_ALL_ROUNDS times;
 *   4. churn: BENCH_RATE writes/s for BENCH_CHURN_SECONDS, each sent at its time (open loop, at most
 *      BENCH_CHURN_IN_FLIGHT = 8 unanswered; 1 waits for each answer): exporter updates, exporters moved to
 *      another group, sites moved to another group; commit → applied p50/p99;
 *   5. idle: BENCH_IDLE_SECONDS: bytes, segments and connections of each site's sockets (counted
 *      at the client), control-plane CPU;
 *   6. restart: kill -9 of every control-plane process right after a few writes, restart on the
 *      same ports: time until every site is connected again and has applied them, with the API's
 *      latency (reads and writes) during that storm; a few writes after;
 *   7. audit: each site's applied versions are its log's entries after its snapshot, each once
 *      and in order (no change lost or repeated), and its copy equals the control plane's set.
 * A new scenario is one more phase function of a Bench (fleet-bench/harness.ts), called from main.
 *
 * At 10,000 sites: each site process's connections leave from a loopback address of its own
 * (127.0.0.2, .3, ...: ephemeral ports), and a control plane is started through prlimit(1) with
 * the open files its sites need when the inherited limit is lower.
 *
 * BENCH_UNTIL=<phase> (fleet, allSites, churn, idle, restart) stops the run after that phase.
 * Memory per site is the live heap after a full GC (the median of three probes 10 s apart, all
 * three printed): each control plane runs with
 * fleet-bench/memory-probe.cjs preloaded, which answers SIGUSR2 with process.memoryUsage();
 * BENCH_HEAP_SNAPSHOTS=1 also writes a heap snapshot at each probe (in the control plane's DATA_DIR).
 * BENCH_ACKS=post: the simulated sites acknowledge as FLEET_ACKS=post (a GET stream, one POST an
 * acknowledgement) instead of in the sync request's body, for a comparison in the same sitting.
 * BENCH_SITE_PROFILE=<directory>: each site process writes its CPU profile there at the end.
 * BENCH_PROFILE=1 runs the control plane with --cpu-prof into ./profiles (its first process is
 * then stopped with SIGTERM, so its profile is written). BENCH_BUILD=0 reuses build/. Every
 * loop is bounded.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CPS, PROCS, SITES, UNTIL } from './fleet-bench/common.js';
import {
  Api,
  Bench,
  fdsNeeded,
  forkSites,
  newControlPlane,
  openFileLimits,
  startDeployment,
} from './fleet-bench/harness.js';
import { allSites, audit, baselines, churn, fleet, idle, printFigures, restart } from './fleet-bench/phases.js';
import { siteProcess } from './fleet-bench/site-process.js';

/** The bench's parties: the Redis deployment, CPS control-plane processes, PROCS site processes. */
async function setUp(): Promise<Bench> {
  const bundle = join(process.cwd(), 'build', 'edgeplane.cjs');
  if (!existsSync(bundle) || process.env.BENCH_BUILD !== '0') {
    const b = spawnSync('npm', ['run', 'build', '--', '--bundle-only'], { stdio: 'inherit' });
    if (b.status !== 0) throw new Error('npm run build failed');
  }
  if (openFileLimits().hard < fdsNeeded)
    process.stderr.write(
      `the open-file limit (ulimit -Hn ${openFileLimits().hard}) is below the ${fdsNeeded} a control plane needs here\n`,
    );
  const deployment = await startDeployment();
  const cps = [];
  // Processes after the first share its store; each its own DATA_DIR.
  for (let i = 0; i < CPS; i++)
    cps.push(await newControlPlane(deployment.env, mkdtempSync(join(tmpdir(), 'edgeplane-bench-fleet-')), i + 1));
  const api = new Api(cps[0]!.url);
  await api.login();
  const b = new Bench(deployment, cps, api);
  for (let i = 0; i < PROCS; i++) b.children.push(await forkSites(i, new URL(import.meta.url).pathname));
  return b;
}

async function main(): Promise<void> {
  // BENCH_MODE=history: the configuration history's cost on the commit path (scripts/bench-history.ts).
  if (process.env.BENCH_MODE === 'history') return (await import('./bench-history.js')).historyBench();
  // BENCH_MODE=rollout: a staged rollout over 1,000 sites in 4 waves (scripts/bench-fleet-rollout.ts).
  if (process.env.BENCH_MODE === 'rollout') return (await import('./bench-fleet-rollout.js')).rolloutBench();
  process.stdout.write(`fleet bench: ${SITES} sites, ${PROCS} site processes, ${CPS} control plane(s)\n`);
  const b = await setUp();
  try {
    await baselines(b);
    // BENCH_UNTIL=<phase>: stop after it (the audit runs only after the whole sequence).
    const phases = { fleet, allSites, churn, idle, restart };
    for (const [name, phase] of Object.entries(phases)) {
      await phase(b);
      if (name === UNTIL) break;
    }
    if (!UNTIL || UNTIL === 'restart') await audit(b);
    printFigures(b);
  } finally {
    await b.stop();
  }
}

if (process.argv.includes('--sites')) {
  siteProcess().catch((err: unknown) => {
    process.stderr.write(`site process failed: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  });
} else {
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`bench-fleet failed: ${err instanceof Error ? err.stack : String(err)}\n`);
      process.exit(1);
    },
  );
}
