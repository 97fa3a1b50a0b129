/**
 * `BENCH_MODE=rollout npm run bench:fleet`: a staged rollout (CONTRACT §11) over BENCH_SITES
 * (default 1,000) simulated sites in 4 waves (`percent: 25, 50, 75, 100`), against the built
 * bundle as users run it (one control plane on a private redis-server). The sites run in
 * BENCH_PROCS child processes (default 3), each site the real sync loop (src/fleet/site/sync-loop.ts)
 * applying to a map in memory and reporting, like a real site, the state of the exporters it
 * holds (`ready`, with their configuration) through the real reporter.
 *
 * Figures: the time of each wave (from the previous wave's last apply, the PATCH for the first,
 * to its own last apply, as the site processes note them; the waves are the sites in name order,
 * a quarter each) and that time beyond the health gate (`healthy-for`, BENCH_HEALTHY, default 1s); the baseline, measured
 * in the same run: the same change without `rollout`, from the PATCH until every site holds it.
 * The driver looks at a wave every 500 ms, so up to that much of each wave's time is its tick.
 * Every loop is bounded.
 */
import { fork, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Api, loadAverage, newControlPlane, procStat, startDeployment } from './fleet-bench/harness.js';

const SITES = Number(process.env.BENCH_SITES ?? 1000);
const PROCS = Math.max(1, Math.min(8, Number(process.env.BENCH_PROCS ?? 3)));
const HEALTHY = process.env.BENCH_HEALTHY ?? '1s';
const TENANT = 'default';
const hookPath = '/v1/config/volga/webhooks/roll';
const hookKey = `${TENANT}/volga/webhooks/roll`;
const siteName = (i: number) => `r${String(i).padStart(5, '0')}`;
const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Ask =
  { type: 'start'; url: string; sites: Array<{ site: string; token: string }> } | { type: 'count'; marker: string };
type Count = { connected: number; synced: number; holding: number; at: Record<string, number> };

// ---- the site processes ------------------------------------------------------------------------

async function siteProcess(): Promise<void> {
  const { startSiteSync } = await import('../src/fleet/site/sync-loop.js');
  const { generateSiteKey } = await import('../src/secrets/sealed.js');
  const { setLogLevel } = await import('../src/lib/log.js');
  setLogLevel('error');
  type Sim = {
    version?: string;
    objects: Map<string, unknown>;
    listeners: Set<() => void>;
    sync?: { connected(): boolean };
    /** The URL of the exporter it holds, and since when. */
    url?: string;
    since?: number;
  };
  const sims = new Map<string, Sim>();
  const changed = (sim: Sim) => {
    const url = (sim.objects.get(hookKey) as { url?: string } | undefined)?.url;
    if (url !== sim.url) [sim.url, sim.since] = [url, now()];
    for (const l of sim.listeners) l();
  };
  const start = (url: string, site: string, token: string) => {
    const sim: Sim = { objects: new Map(), listeners: new Set() };
    sims.set(site, sim);
    const { publicKey } = generateSiteKey();
    sim.sync = startSiteSync({
      url,
      site,
      token,
      publicKey: () => Promise.resolve(publicKey),
      reportIntervalMs: 100,
      target: {
        load: () => Promise.resolve(sim.version),
        applyEntry(version, changes) {
          for (const c of changes)
            if (c.op === 'put') sim.objects.set(c.key, c.value);
            else sim.objects.delete(c.key);
          sim.version = version;
          changed(sim);
          return Promise.resolve(true);
        },
        applySnapshot(version, objects) {
          sim.objects = new Map(objects);
          sim.version = version;
          changed(sim);
          return Promise.resolve();
        },
      },
      // What a real site reports of its exporters: each one it holds, `ready`, with its configuration.
      hooks: {
        read: () => Promise.resolve({ status: 404, body: null }),
        report: () => {
          const items = [...sim.objects]
            .filter(([key]) => key.startsWith(`${TENANT}/volga/webhooks/`))
            .map(([key, value]) => ({
              path: key.slice(TENANT.length + 1),
              value: { ...(value as object), status: 'ready' },
              config: Object.keys(value as object),
            }));
          return Promise.resolve({ [TENANT]: items });
        },
        onChange: (l) => {
          sim.listeners.add(l);
          return () => sim.listeners.delete(l);
        },
      },
    });
  };
  process.on('message', (msg: Ask & { rid: number }) => {
    if (msg.type === 'start') {
      for (const s of msg.sites) start(msg.url, s.site, s.token);
      return void process.send!({ rid: msg.rid });
    }
    const c: Count = { connected: 0, synced: 0, holding: 0, at: {} };
    for (const [site, s] of sims) {
      if (s.sync?.connected()) c.connected++;
      if (s.version !== undefined) c.synced++;
      if (!s.url?.endsWith(`/${msg.marker}`)) continue;
      c.holding++;
      c.at[site] = s.since!;
    }
    process.send!({ rid: msg.rid, ...c });
  });
  process.send!({ ready: true });
}

// ---- the bench ---------------------------------------------------------------------------------

type Child = { proc: ChildProcess; ask(msg: Ask): Promise<unknown> };

function forkChild(): Promise<Child> {
  const proc = fork(fileURLToPath(import.meta.url), ['--rollout-sites'], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  let rid = 0;
  const waiting = new Map<number, (v: unknown) => void>();
  proc.on('message', (m: { rid?: number }) => {
    if (m.rid !== undefined) waiting.get(m.rid)?.(m);
  });
  const ask = (msg: Ask) =>
    new Promise((resolve, reject) => {
      const id = ++rid;
      const t = setTimeout(() => reject(new Error(`site process: no answer to ${msg.type}`)), 60_000);
      waiting.set(id, (v) => {
        clearTimeout(t);
        waiting.delete(id);
        resolve(v);
      });
      proc.send({ ...msg, rid: id });
    });
  return new Promise((resolve, reject) => {
    proc.once('message', () => resolve({ proc, ask }));
    proc.once('exit', (code) => reject(new Error(`site process exited (${code})`)));
  });
}

async function count(children: Child[], marker: string): Promise<Count> {
  const all = (await Promise.all(children.map((c) => c.ask({ type: 'count', marker })))) as Count[];
  return all.reduce((a, c) => ({
    connected: a.connected + c.connected,
    synced: a.synced + c.synced,
    holding: a.holding + c.holding,
    at: { ...a.at, ...c.at },
  }));
}

/** Polls `cond` every `everyMs` for at most `maxMs`; throws naming `what` when it never holds. */
async function until(what: string, maxMs: number, everyMs: number, cond: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i <= maxMs / everyMs; i++) {
    if (await cond()) return;
    await sleep(everyMs);
  }
  throw new Error(`bench: ${what} did not happen within ${maxMs} ms`);
}

const hook = (marker: string, rollout: boolean) => ({
  name: 'roll',
  topics: ['bench'],
  url: `http://127.0.0.1:9/${marker}`,
  data: '${MSG_PAYLOAD}',
  'site-placement': { 'match-site-labels': 'ring' },
  ...(rollout
    ? {
        rollout: {
          waves: [{ percent: 25 }, { percent: 50 }, { percent: 75 }, { percent: 100 }],
          'healthy-for': HEALTHY,
        },
      }
    : {}),
});

type Progress = { wave: number; state: string; 'sites-updated': number };

/**
 * One rollout of `marker`: the PATCH, then the time each site applied it (noted by its process).
 * The waves take the sites in name order, a quarter each; a wave's time runs from the previous
 * wave's last apply (the PATCH for the first) to its own last apply.
 */
async function rolloutOnce(api: Api, children: Child[], marker: string): Promise<{ waves: number[]; total: number }> {
  const t0 = now();
  await api.call('PATCH', hookPath, { url: `http://127.0.0.1:9/${marker}` });
  let c: Count | undefined;
  await until(
    `the rollout of ${marker}`,
    600_000,
    200,
    async () => (c = await count(children, marker)).holding === SITES,
  );
  await until(`the rollout of ${marker} done`, 60_000, 200, async () => {
    const st = (await api.call('GET', '/v1/state/volga/webhooks/roll?fields=rollout')) as { rollout?: Progress };
    return st.rollout?.state === 'done';
  });
  const names = Array.from({ length: SITES }, (_, i) => siteName(i));
  const ends: number[] = [];
  for (let w = 0; w < 4; w++)
    ends.push(Math.max(...names.slice((w * SITES) / 4, ((w + 1) * SITES) / 4).map((n) => c!.at[n] ?? NaN)));
  return { waves: ends.map((e, w) => e - (w === 0 ? t0 : ends[w - 1]!)), total: ends[3]! - t0 };
}

export async function rolloutBench(): Promise<void> {
  const bundle = join(process.cwd(), 'build', 'edgeplane.cjs');
  if (!existsSync(bundle) || process.env.BENCH_BUILD !== '0') {
    const b = spawnSync('npm', ['run', 'build', '--', '--bundle-only'], { stdio: 'inherit' });
    if (b.status !== 0) throw new Error('npm run build failed');
  }
  process.stdout.write(`rollout bench: ${SITES} sites in ${PROCS} processes, 4 waves, healthy-for ${HEALTHY}\n`);
  const deployment = await startDeployment('standalone');
  const cp = await newControlPlane(deployment.env, mkdtempSync(join(tmpdir(), 'edgeplane-bench-rollout-')), 1);
  const children: Child[] = [];
  try {
    const api = new Api(cp.url);
    await api.login();
    const names = Array.from({ length: SITES }, (_, i) => siteName(i));
    for (let i = 0; i < names.length; i += 100)
      await api.call(
        'PATCH',
        '/v1/config',
        names
          .slice(i, i + 100)
          .map((n, k) => ({ 'x-path': `/v1/config/sites/${n}`, name: n, labels: { ring: `r${(i + k) % 4}` } })),
      );
    const tokens: Array<{ site: string; token: string }> = [];
    for (let i = 0; i < names.length; i += 16)
      tokens.push(
        ...(await Promise.all(
          names.slice(i, i + 16).map(async (site) => ({
            site,
            token: ((await api.call('POST', `/v1/state/sites/${site}/issue-token`)) as { token: string }).token,
          })),
        )),
      );
    for (let p = 0; p < PROCS; p++) children.push(await forkChild());
    await Promise.all(
      children.map((c, p) => c.ask({ type: 'start', url: cp.url, sites: tokens.filter((_, i) => i % PROCS === p) })),
    );
    await until('every site connected and synced', 300_000, 200, async () => {
      const c = await count(children, 'none');
      return c.connected === SITES && c.synced === SITES;
    });
    // The exporter arrives (a rollout of a new object: wave by wave too).
    // A PUT is idempotent: one that timed out on the loaded machine is sent again.
    await api.call('PUT', hookPath, hook('w0', true)).catch(() => api.call('PUT', hookPath, hook('w0', true)));
    await until('the first rollout', 600_000, 200, async () => (await count(children, 'w0')).holding === SITES);
    await until('the first rollout done', 600_000, 200, async () => {
      const st = (await api.call('GET', '/v1/state/volga/webhooks/roll?fields=rollout')) as { rollout?: Progress };
      return st.rollout?.state === 'done';
    });
    // Baseline: the same change without rollout, from the PATCH until every site holds it.
    await api.call('PUT', hookPath, hook('w1', false));
    await until('w1 everywhere', 300_000, 20, async () => (await count(children, 'w1')).holding === SITES);
    const base: number[] = [];
    for (const m of ['w2', 'w3']) {
      const t0 = now();
      await api.call('PATCH', hookPath, { url: `http://127.0.0.1:9/${m}` });
      await until(`${m} everywhere`, 300_000, 20, async () => (await count(children, m)).holding === SITES);
      base.push(now() - t0);
    }
    await api.call('PUT', hookPath, hook('w3', true));
    await sleep(2000);
    const cpu0 = procStat(cp.child.pid!).cpuMs;
    const runs: Array<{ waves: number[]; total: number }> = [];
    for (const m of ['w4', 'w5']) {
      runs.push(await rolloutOnce(api, children, m));
      const c = await count(children, m);
      if (c.holding !== SITES) throw new Error(`after the rollout of ${m}, ${c.holding} of ${SITES} sites hold it`);
    }
    const cpu = procStat(cp.child.pid!).cpuMs - cpu0;
    const healthyMs = Number(/^(\d+)s$/.exec(HEALTHY)?.[1] ?? NaN) * 1000;
    const baseMs = Math.min(...base);
    process.stdout.write(`\nload average ${loadAverage()}\n`);
    process.stdout.write(
      `baseline (no rollout): PATCH → all ${SITES} sites hold it: ${base.map((x) => x.toFixed(0)).join(', ')} ms\n`,
    );
    for (const [r, run] of runs.entries()) {
      // The first wave has no gate before it: only waves 2.. wait for healthy-for.
      const beyond = run.waves.slice(1).map((w) => w - healthyMs);
      const mean = beyond.length ? beyond.reduce((a, b) => a + b, 0) / beyond.length : NaN;
      process.stdout.write(
        `rollout ${r + 1}: total ${(run.total / 1000).toFixed(2)} s; per wave ${run.waves.map((w) => w.toFixed(0)).join(', ')} ms; ` +
          `wave 1 (no gate before it) ${(run.waves[0] ?? NaN).toFixed(0)} ms; ` +
          `waves 2.. beyond healthy-for ${beyond.map((w) => w.toFixed(0)).join(', ')} ms (mean ${mean.toFixed(0)}, ` +
          `${(mean / baseMs).toFixed(1)}× the baseline)\n`,
      );
    }
    process.stdout.write(`control-plane CPU during the two rollouts: ${(cpu / 1000).toFixed(1)} s\n`);
  } finally {
    for (const c of children) c.proc.kill('SIGKILL');
    cp.child.kill('SIGTERM');
    await new Promise((r) => cp.child.once('exit', r));
    await deployment.stop();
  }
}

if (process.argv.includes('--rollout-sites'))
  siteProcess().catch((err: unknown) => {
    process.stderr.write(`rollout site process failed: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  });
