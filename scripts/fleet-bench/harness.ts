/**
 * The fleet bench's orchestrator side: the Redis deployment, the control-plane processes (the
 * built bundle), the site processes, the API client, and `Bench`, the state every phase shares
 * (the bench's model of the configuration, its writes with the expectations they carry, and the
 * figures printed at the end). A phase (phases.ts, or a module of its own) is a function of a
 * Bench.
 */
import { fork, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createClient, createCluster } from 'redis';
import { freePort, startRedis } from '../../test/helpers/redis.js';
import { startRedisCluster, startSentinelSet } from '../../test/helpers/redis-deployments.js';
import {
  CPS,
  emptyStatus,
  exporterBody,
  exporterKey,
  matches,
  now,
  PASSWORD,
  PROFILE,
  REDIS_KIND,
  SITES,
  siteBody,
  siteIndex,
  siteKey,
  sleep,
  type ExporterModel,
  type Item,
  type SiteModel,
  type Status,
  type Unmet,
} from './common.js';

// ---- the Redis deployment ----------------------------------------------------------------------

export type Deployment = {
  kind: string;
  /** The environment that names it to edgeplane (REDIS_URL, REDIS_SENTINELS + master, or REDIS_CLUSTER). */
  env: Record<string, string>;
  /** A URL of the current primary, for the bench's own reads (baselines, audit). */
  primaryUrl(): Promise<string>;
  /** Redis Cluster: the bench reads through a cluster client (keys live on three primaries). */
  cluster?: boolean;
  /**
   * With replicas: kill -9 of the primary (on Cluster: of `key`'s slot; resolves with its port),
   * and the wait for a replica's promotion in its place.
   */
  failover?: {
    killPrimary(key: string): Promise<number>;
    waitPromoted(key: string, old: number, timeoutMs?: number): Promise<number>;
  };
  stop(): Promise<void>;
};

export async function startDeployment(kind = REDIS_KIND): Promise<Deployment> {
  if (kind === 'standalone') {
    const r = await startRedis();
    return { kind, env: { REDIS_URL: r.url }, primaryUrl: () => Promise.resolve(r.url), stop: () => r.stop() };
  }
  if (kind === 'sentinel') {
    const set = await startSentinelSet();
    return {
      kind: 'sentinel (a primary, a replica, three sentinels)',
      env: { ...set.env },
      primaryUrl: async () => `redis://127.0.0.1:${await set.primaryPort()}`,
      failover: { killPrimary: () => set.killPrimary(), waitPromoted: (_, old, ms) => set.waitPromoted(old, ms) },
      stop: () => set.dispose(),
    };
  }
  if (kind === 'cluster') {
    const set = await startRedisCluster();
    return {
      kind: 'cluster (three primaries, three replicas)',
      env: { ...set.env },
      // The bench's own reads (baselines, audit) of keys in one slot: the configuration's.
      primaryUrl: async () => `redis://127.0.0.1:${await set.primaryOf('{ep}')}`,
      cluster: true,
      failover: {
        killPrimary: (key) => set.killPrimaryOf(key),
        waitPromoted: (key, old, ms) => set.waitPromoted(key, old, ms),
      },
      stop: () => set.stop(),
    };
  }
  throw new Error(`BENCH_REDIS must be standalone, sentinel or cluster, got ${JSON.stringify(kind)}`);
}

/** The bench's own Redis reads of the fleet logs (the audit): a cluster client on Cluster. */
export type LogReader = {
  log(site: string): Promise<string[]>;
  set(site: string): Promise<Record<string, string>>;
  close(): Promise<void>;
};

export async function logReader(d: Deployment): Promise<LogReader> {
  const url = await d.primaryUrl();
  // On Cluster a site's keys are under its hash tag (src/fleet/control/change-log.ts).
  const tag = (site: string) => (d.cluster ? `{${site}}` : site);
  const c = d.cluster ? createCluster({ rootNodes: [{ url }] }) : createClient({ url });
  await c.connect();
  return {
    log: async (site) => (await c.xRange(`ep:fleet:${tag(site)}:log`, '-', '+')).map((r) => r.id),
    set: (site) => c.hGetAll(`ep:fleet:${tag(site)}:set`),
    close: () => c.close(),
  };
}

// ---- site processes ----------------------------------------------------------------------------

export type Child = { proc: ChildProcess; sites: string[]; ask<T>(msg: Record<string, unknown>): Promise<T> };

let rid = 0;
/**
 * A site process: bench-fleet.ts run with --sites. With many sites, each process's connections
 * leave from a loopback address of its own (127.0.0.2, .3, ...), so that 10,000 sites with two
 * connections each do not exhaust one source address's ephemeral ports towards the control plane.
 */
export function forkSites(index: number, entry: string): Promise<Child> {
  const env = { ...process.env };
  if (SITES > 5000 || process.env.BENCH_SOURCE_ADDRESSES === '1') env.BENCH_SOURCE_ADDRESS = `127.0.0.${2 + index}`;
  const proc = fork(entry, ['--sites'], {
    execArgv: ['--import', 'tsx', '--max-old-space-size=4096', '--max-semi-space-size=32'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env,
  });
  const waiting = new Map<number, (v: unknown) => void>();
  proc.on('message', (m: { rid?: number }) => {
    if (m.rid === undefined) return;
    waiting.get(m.rid)?.(m);
    waiting.delete(m.rid);
  });
  const child: Child = {
    proc,
    sites: [],
    ask: <T>(msg: Record<string, unknown>) =>
      new Promise<T>((resolve, reject) => {
        const id = ++rid;
        // Generous: on a loaded machine 2,500 sites' snapshots can hold a site process for minutes.
        const timer = setTimeout(() => reject(new Error(`site process: no answer to ${String(msg.type)}`)), 600_000);
        waiting.set(id, (v) => {
          clearTimeout(timer);
          resolve(v as T);
        });
        proc.send({ ...msg, rid: id });
      }),
  };
  return new Promise((resolve, reject) => {
    proc.once('message', () => resolve(child));
    proc.once('exit', (code) => reject(new Error(`site process exited (${code})`)));
  });
}

// ---- control-plane processes -------------------------------------------------------------------

export type Cp = { child: ChildProcess; url: string; port: number; dataDir: string; instance: number };

/** Polls GET /healthz until the process answers (bounded). */
async function waitHealthy(child: ChildProcess, url: string): Promise<void> {
  for (let i = 0; i < 1200; i++) {
    if (child.exitCode !== null) throw new Error(`control plane exited (${child.exitCode})`);
    const ok = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(1000) })
      .then((r) => r.ok)
      .catch(() => false);
    if (ok) return;
    await sleep(50);
  }
  throw new Error('control plane did not start');
}

const strongboxKey = randomBytes(32).toString('base64');

/** Control planes still running are killed when the bench exits, even on a crash. */
const started = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of started) if (c.exitCode === null) c.kill('SIGKILL');
});

/** Open files a control plane needs: one a site it serves (its sync stream; acks close their connection) and room. */
export const fdsNeeded = Math.ceil(SITES / CPS) + 4096;

/** The soft and hard limits of open files this process has (inherited by what it spawns). */
export function openFileLimits(): { soft: number; hard: number } {
  const r = spawnSync('sh', ['-c', 'ulimit -Sn; ulimit -Hn'], { encoding: 'utf8' });
  const [soft, hard] = r.stdout
    .trim()
    .split('\n')
    .map((x) => (x === 'unlimited' ? Infinity : Number(x)));
  return { soft: soft || 1024, hard: hard || 1024 };
}

/**
 * The built bundle in its own process, as a user starts it, on a fixed port (a restart reuses
 * it). When the inherited soft open-file limit is below what its sites need, it is started
 * through prlimit(1) with a higher one, up to the hard limit (as a service manager's LimitNOFILE would).
 */
export async function startControlPlane(
  redisEnv: Record<string, string>,
  port: number,
  dataDir: string,
  instance: number,
): Promise<Cp> {
  const bundle = join(process.cwd(), 'build', 'edgeplane.cjs');
  // The memory probe (memory-probe.cjs): on SIGUSR2, a full GC and the heap in use, into a file.
  const node = [
    process.execPath,
    '--expose-gc',
    '-r',
    join(process.cwd(), 'scripts', 'fleet-bench', 'memory-probe.cjs'),
    ...(PROFILE ? ['--cpu-prof', '--cpu-prof-dir', join(process.cwd(), 'profiles')] : []),
  ];
  if (PROFILE) mkdirSync('profiles', { recursive: true });
  // Up to the hard limit, which an unprivileged process may raise its soft limit to.
  const { soft, hard } = openFileLimits();
  const raise = soft < fdsNeeded && soft < hard;
  const [cmd, ...args] = raise
    ? ['prlimit', `--nofile=${Math.min(fdsNeeded, hard)}:${hard}`, '--', ...node, bundle]
    : [...node, bundle];
  const child = spawn(cmd!, args, {
    stdio: ['ignore', 'inherit', 'inherit'],
    env: {
      ...process.env,
      ...redisEnv,
      PORT: String(port),
      HOST: '127.0.0.1',
      SITE: 'hq',
      ADMIN_PASSWORD: PASSWORD,
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      // Processes sharing one Redis share the secret store's key (README, Fleet).
      STRONGBOX_KEY: strongboxKey,
      BENCH_INSTANCE: String(instance),
      BENCH_MEMORY_PROBE: join(dataDir, 'memory-probe.json'),
    },
  });
  started.add(child);
  child.once('exit', () => started.delete(child));
  const url = `http://127.0.0.1:${port}`;
  await waitHealthy(child, url);
  return { child, url, port, dataDir, instance };
}

export async function newControlPlane(
  redisEnv: Record<string, string>,
  dataDir: string,
  instance: number,
): Promise<Cp> {
  return startControlPlane(redisEnv, await freePort(), dataDir, instance);
}

type ProbeAnswer = { n: number; heapUsed: number; external: number; arrayBuffers: number; rss: number };

/** The control plane's memory after a full GC (memory-probe.cjs answers SIGUSR2), bounded at 180 s (a heap snapshot under load is slow). */
export async function probeMemory(cp: Cp): Promise<ProbeAnswer> {
  const file = join(cp.dataDir, 'memory-probe.json');
  const read = (): ProbeAnswer | undefined => {
    try {
      return JSON.parse(readFileSync(file, 'utf8')) as ProbeAnswer;
    } catch {
      return undefined;
    }
  };
  const before = read()?.n ?? 0;
  cp.child.kill('SIGUSR2');
  for (let i = 0; i < 1800; i++) {
    await sleep(100);
    const got = read();
    if (got && got.n > before) return got;
  }
  throw new Error('the control plane did not answer the memory probe');
}

export function procStat(pid: number): { cpuMs: number; rssMb: number } {
  const fields = (readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1] ?? '').split(' ');
  const rss = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return { cpuMs: (Number(fields[11]) + Number(fields[12])) * 10, rssMb: Number(rss ?? 0) / 1024 };
}

/** The load average now (1, 5, 15 minutes), printed beside the figures. */
export const loadAverage = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

export class Api {
  private token = '';
  constructor(public url: string) {}
  async login(): Promise<void> {
    const r = await fetch(`${this.url}/v1/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'admin', password: PASSWORD }),
    });
    const body = (await r.json()) as { token?: string };
    if (!body.token) throw new Error(`login failed: ${r.status}`);
    this.token = body.token;
  }
  async call(method: string, path: string, body?: unknown): Promise<unknown> {
    for (let attempt = 0; attempt < 2; attempt++) {
      const r = await fetch(this.url + path, {
        method,
        headers: { authorization: `Bearer ${this.token}`, 'content-type': 'application/json' },
        signal: AbortSignal.timeout(60_000),
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      const text = await r.text();
      if (r.status === 401 && attempt === 0) {
        await this.login();
        continue;
      }
      if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${text.slice(0, 300)}`);
      return text ? (JSON.parse(text) as unknown) : undefined;
    }
    throw new Error(`${method} ${path}: unauthorized`);
  }
}

// ---- the state every phase shares ----------------------------------------------------------------

export class Bench {
  readonly t00 = now();
  readonly children: Child[] = [];
  readonly sites = new Map<string, SiteModel>();
  readonly exporters = new Map<string, ExporterModel>();
  /** write id → how long the API took to answer it */
  readonly putMs = new Map<number, number>();
  readonly rows: Array<[string, string, string]> = [];
  readonly unmet: Unmet[] = [];
  folded = 0;
  /** Expectations of the writes after the restart that no site met (phase 6), for the audit. */
  afterLeft = 0;
  /** The id of the last write made (expectations are numbered by it). */
  writeId = 0;
  /** 1-site commit → applied p50 and p99 (phase 1), the ratios' baseline. */
  base = { p50: NaN, p99: NaN };

  constructor(
    readonly deployment: Deployment,
    public cps: Cp[],
    readonly api: Api,
  ) {}

  get urls(): string[] {
    return this.cps.map((c) => c.url);
  }

  owner(site: string): Child {
    return this.children[siteIndex(site) % this.children.length]!;
  }

  row(what: string, figure: string, note = ''): void {
    this.rows.push([what, figure, note]);
    process.stdout.write(`  ${what}: ${figure}${note ? `  (${note})` : ''}\n`);
  }

  /** The control-plane processes' CPU time (ms) and RSS (MB), summed. */
  cpStat(): { cpuMs: number; rssMb: number } {
    const out = { cpuMs: 0, rssMb: 0 };
    for (const c of this.cps) {
      const s = procStat(c.child.pid!);
      out.cpuMs += s.cpuMs;
      out.rssMb += s.rssMb;
    }
    return out;
  }

  /** Connects `sites` (with their tokens) in their processes. */
  async connect(tokens: Map<string, string>): Promise<void> {
    await Promise.all(
      this.children.map((c) => {
        const mine = [...tokens.keys()].filter((n) => this.owner(n) === c);
        c.sites.push(...mine);
        return c.ask({
          type: 'start',
          urls: this.urls,
          sites: mine.map((site) => ({ site, token: tokens.get(site)! })),
        });
      }),
    );
  }

  /** Tells the site processes what write `id` must bring to which sites. */
  private expect(id: number, t0: number, items: Item[]): void {
    const per = new Map<Child, Item[]>();
    for (const it of items) {
      const c = this.owner(it[0]);
      let l = per.get(c);
      if (!l) per.set(c, (l = []));
      l.push(it);
    }
    for (const [c, l] of per) c.proc.send({ type: 'expect', id, t0, items: l });
  }

  /** The site processes' status, summed; `upTo`: stuck counts only writes up to that id. */
  async status(upTo?: number): Promise<Status> {
    const all = await Promise.all(this.children.map((c) => c.ask<{ status: Status }>({ type: 'status', upTo })));
    const sum = emptyStatus();
    for (const { status: s } of all) for (const k of Object.keys(sum) as Array<keyof Status>) sum[k] += s[k];
    return sum;
  }

  /** The (write, ms) pairs measured so far; `final` ends the phase (see the site process). */
  async drain(final = true): Promise<Array<[number, number]>> {
    const all = await Promise.all(
      this.children.map((c) =>
        c.ask<{ results: Array<[number, number]>; folded: number; unmet: Unmet[] }>({ type: 'results', final }),
      ),
    );
    for (const a of all) {
      this.folded += a.folded;
      this.unmet.push(...a.unmet);
    }
    return all.flatMap((a) => a.results);
  }

  /** Waits (bounded) until every concerned site holds what was last written; returns how many do not. */
  async settle(ms: number): Promise<number> {
    const deadline = Date.now() + ms;
    let s = await this.status();
    while (s.stuck > 0 && Date.now() < deadline) {
      await sleep(100);
      s = await this.status();
    }
    await sleep(300); // the sites' last applies of a fold, if they come
    return (await this.status()).stuck;
  }

  /** PUTs exporter `e` with a new marker and `selector`, after telling the sites concerned. */
  async writeExporter(e: ExporterModel, selector: string, api = this.api): Promise<number> {
    const id = ++this.writeId;
    const before = e.selector;
    e.selector = selector;
    e.marker = `w${id}`;
    const items: Item[] = [];
    for (const [name, s] of this.sites) {
      if (matches(selector, s, name)) items.push([name, exporterKey(e.name), e.marker]);
      else if (matches(before, s, name)) items.push([name, exporterKey(e.name), null]);
    }
    const t0 = now();
    this.expect(id, t0, items);
    await api.call('PUT', `/v1/config/volga/webhooks/${e.name}`, exporterBody(e));
    this.putMs.set(id, now() - t0);
    return id;
  }

  /** Moves site `name` to `group` (a new marker on it), after telling its process. */
  async moveSite(name: string, group: number): Promise<number> {
    const id = ++this.writeId;
    const s = this.sites.get(name)!;
    const before = { ...s };
    s.group = group;
    s.marker = `w${id}`;
    const items: Item[] = [[name, siteKey(name), s.marker]];
    for (const e of this.exporters.values()) {
      const was = matches(e.selector, before, name);
      const is = matches(e.selector, s, name);
      if (is && !was) items.push([name, exporterKey(e.name), e.marker]);
      if (was && !is) items.push([name, exporterKey(e.name), null]);
    }
    const t0 = now();
    this.expect(id, t0, items);
    await this.api.call('PUT', `/v1/config/sites/${name}`, siteBody(name, s));
    this.putMs.set(id, now() - t0);
    return id;
  }

  async stop(): Promise<void> {
    await Promise.all(this.children.map((c) => c.ask({ type: 'stop' }).catch(() => undefined)));
    for (const c of this.children) c.proc.kill();
    for (const cp of this.cps)
      if (cp.child.exitCode === null) {
        const exited = new Promise((r) => cp.child.once('exit', r));
        cp.child.kill('SIGTERM');
        const hard = setTimeout(() => cp.child.kill('SIGKILL'), 20_000);
        await exited;
        clearTimeout(hard);
      }
    await this.deployment.stop();
  }
}
