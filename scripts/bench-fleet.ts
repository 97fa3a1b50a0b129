/**
 * `npm run bench:fleet`: one control plane and BENCH_SITES (default 1,000) edge sites, as users
 * run them. The control plane is the built bundle (`npm run build` → `node build/edgeplane.cjs`)
 * in its own process on a private redis-server; the sites are simulated in BENCH_PROCS (default
 * 3) child processes, each site running the real sync loop (src/fleet/site/sync-loop.ts: its SSE
 * client, reconnection back-off and acknowledgements) and applying what it receives to a copy in
 * memory (a SyncTarget) instead of a store. Site tokens are issued through the API.
 *
 * Every write carries a marker (`w<n>`: in an exporter's url, in a site's `bench-w` label); the
 * bench knows which sites each write concerns (the labels it gave them) and tells their
 * processes before it writes; a site process notes when each concerned site has applied it
 * (the marker arrived, or the exporter left the site). Latency runs from sending the write to
 * that apply (so it includes the API's own commit).
 *
 * Phases, in one run:
 *   1. baselines: a raw Redis XADD → XREAD BLOCK round trip, and the same commit → applied path
 *      with one site (the first, alone in the configuration), BENCH_BASE_WRITES writes at 20/s;
 *   2. the fleet: the other sites (labels region r0..r9, group g0..g49) and 40 exporters placed
 *      by `group=` / `region=` are created, every site connects; control-plane RSS before and
 *      after (per site);
 *   3. one change to every site (an exporter placed on all sites), BENCH_ALL_ROUNDS times;
 *   4. churn at BENCH_RATE writes/s for BENCH_CHURN_SECONDS: exporter updates, exporters moved
 *      to another group, sites moved to another group; commit → applied p50/p99;
 *   5. idle for BENCH_IDLE_SECONDS: bytes each site's sockets read and wrote (counted at the
 *      client, TCP payload), control-plane CPU;
 *   6. kill -9 of the control plane right after a few writes, restart on the same port: time
 *      until every site is connected again and has applied those writes; a few writes after;
 *   7. audit: each site's applied versions are its log's entries after its snapshot, each once
 *      and in order (no change lost or repeated), and its copy equals the control plane's set.
 *
 * BENCH_PROFILE=1 runs the control plane with --cpu-prof into ./profiles (its first process is
 * then stopped with SIGTERM, so its profile is written). BENCH_BUILD=0 reuses build/. Every
 * loop is bounded; the run takes two to four minutes.
 */
import { fork, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Socket } from 'node:net';
import { createClient } from 'redis';
import { compareVersions } from '../src/fleet/common/protocol.js';
import { freePort, startRedis } from '../test/helpers/redis.js';

const SITES = Number(process.env.BENCH_SITES ?? 1000);
const PROCS = Math.max(1, Math.min(8, Number(process.env.BENCH_PROCS ?? 3)));
const RATE = Number(process.env.BENCH_RATE ?? 20);
const CHURN_SECONDS = Number(process.env.BENCH_CHURN_SECONDS ?? 30);
const IDLE_SECONDS = Number(process.env.BENCH_IDLE_SECONDS ?? 32);
const ALL_ROUNDS = Number(process.env.BENCH_ALL_ROUNDS ?? 3);
const BASE_WRITES = Number(process.env.BENCH_BASE_WRITES ?? 100);
const PROFILE = process.env.BENCH_PROFILE === '1';
const PASSWORD = 'bench-password-1';
const TENANT = 'default';
const GROUPS = 50;
const REGIONS = 10;
const EXPORTERS = 40;

const siteName = (i: number) => `s${String(i).padStart(4, '0')}`;
const siteKey = (site: string) => `${TENANT}/sites/${site}`;
const exporterKey = (name: string) => `${TENANT}/volga/webhooks/${name}`;
const now = () => performance.timeOrigin + performance.now();

/** An expectation: `site` holds `key` with `marker` (null: no longer holds it) once write `id` applied. */
type Item = [site: string, key: string, marker: string | null];
const markerIndex = (m: string | null) => (m ? Number(m.slice(1)) : -1);

function markerOf(key: string, value: unknown): string | null | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as { url?: unknown; labels?: Record<string, unknown> };
  if (key.startsWith(`${TENANT}/volga/webhooks/`) && typeof v.url === 'string')
    return /\/(w\d+)$/.exec(v.url)?.[1] ?? null;
  if (key.startsWith(`${TENANT}/sites/`) && typeof v.labels?.['bench-w'] === 'string') return v.labels['bench-w'];
  return undefined;
}

/** Digest of a set of objects, the same for the site's copy and the control plane's hash. */
function digest(entries: Iterable<[string, unknown]>): string {
  const h = createHash('sha1');
  for (const [k, v] of [...entries].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)))
    h.update(k + '\n' + JSON.stringify(v) + '\n');
  return h.digest('hex');
}

// ---------------------------------------------------------------------------------------------
// A site process (this file run with --sites): many simulated sites, each the real sync loop.

type ToChild =
  | { type: 'start'; rid: number; url: string; sites: Array<{ site: string; token: string }> }
  | { type: 'expect'; id: number; t0: number; items: Item[] }
  | { type: 'status'; rid: number }
  | { type: 'results'; rid: number; final: boolean }
  | { type: 'audit'; rid: number }
  | { type: 'stop'; rid: number };

type Status = {
  sites: number;
  connected: number;
  synced: number;
  pending: number;
  /** Pending expectations whose site does not yet hold the newest state expected of that object. */
  stuck: number;
  bytes: number;
  segments: number;
  cpuMs: number;
};
type SiteAudit = {
  site: string;
  events: Array<['snapshot' | 'change', string]>;
  skipped: number;
  digest: string;
  /** The bench's objects the site holds, with their markers. */
  held: Array<[string, string | null]>;
};
/** An expectation no apply answered: the write, site, key, marker expected and the last one seen. */
type Unmet = { id: number; site: string; key: string; marker: string | null; seen: string | null | undefined };

async function siteProcess(): Promise<void> {
  // Count the bytes of every socket undici opens (TCP payload as the client sees it), by
  // wrapping net.connect before undici is loaded (it calls net.connect through the module).
  const net = createRequire(import.meta.url)('node:net') as typeof import('node:net');
  const sockets = new Set<Socket>();
  let closedBytes = 0;
  let segments = 0;
  const original = net.connect.bind(net) as (...args: unknown[]) => Socket;
  (net as { connect: unknown }).connect = (...args: unknown[]) => {
    const s = original(...args);
    sockets.add(s);
    s.on('data', () => void segments++);
    s.once('close', () => {
      sockets.delete(s);
      closedBytes += s.bytesRead + s.bytesWritten;
    });
    return s;
  };
  const bytes = () => {
    let n = closedBytes;
    for (const s of sockets) n += s.bytesRead + s.bytesWritten;
    return n;
  };
  const { startSiteSync } = await import('../src/fleet/site/sync-loop.js');
  const { generateSiteKey } = await import('../src/secrets/sealed.js');
  const { setLogLevel } = await import('../src/lib/log.js');
  setLogLevel('error'); // a control-plane restart makes every site warn once

  type Pending = { id: number; t0: number; marker: string | null };
  type Sim = {
    version: string | undefined;
    objects: Map<string, unknown>;
    events: Array<['snapshot' | 'change', string]>;
    skipped: number;
    sync?: { connected(): boolean; stop(): Promise<void> };
  };
  const sims = new Map<string, Sim>();
  const pending = new Map<string, Pending[]>(); // site \n key → expectations, oldest first
  const last = new Map<string, { marker: string | null; t: number }>();
  let pendingCount = 0;
  let results: Array<[number, number]> = []; // [write id, ms]

  const resolve = (list: Pending[], i: number, t: number) => {
    const p = list[i]!;
    results.push([p.id, t - p.t0]);
    list.splice(i, 1);
    pendingCount--;
  };
  /** Site `site` now holds `key` with `marker` (null: deleted), at time t. */
  const observe = (site: string, key: string, marker: string | null, t: number) => {
    const k = site + '\n' + key;
    last.set(k, { marker, t });
    const list = pending.get(k);
    if (!list) return;
    if (marker === null) {
      // A deletion answers the oldest expectation of one.
      const i = list.findIndex((p) => p.marker === null);
      if (i >= 0) resolve(list, i, t);
    } else {
      // This marker, or any write at or before it (folded into the same projection).
      for (let i = list.length - 1; i >= 0; i--)
        if (list[i]!.marker === marker || list[i]!.id <= markerIndex(marker)) resolve(list, i, t);
    }
    if (list.length === 0) pending.delete(k);
  };
  /** The marker `site` holds for `key` now (null: does not hold it). */
  const holds = (site: string, key: string): string | null => {
    const v = sims.get(site)?.objects.get(key);
    return v === undefined ? null : (markerOf(key, v) ?? null);
  };
  const isStuck = (k: string, list: Pending[]) => {
    const [site, key] = k.split('\n') as [string, string];
    return holds(site, key) !== list[list.length - 1]!.marker;
  };
  const watched = (key: string) => key.startsWith(`${TENANT}/sites/`) || key.startsWith(`${TENANT}/volga/webhooks/`);

  const target = (site: string, sim: Sim) => ({
    load: () => Promise.resolve(sim.version),
    applyEntry(version: string, changes: Array<{ op: 'put' | 'delete'; key: string; value?: unknown }>) {
      if (sim.version !== undefined && compareVersions(version, sim.version) <= 0) {
        sim.skipped++;
        return Promise.resolve(false);
      }
      const t = now();
      for (const c of changes) {
        if (c.op === 'put') sim.objects.set(c.key, c.value);
        else sim.objects.delete(c.key);
        if (watched(c.key)) observe(site, c.key, c.op === 'put' ? (markerOf(c.key, c.value) ?? null) : null, t);
      }
      sim.version = version;
      sim.events.push(['change', version]);
      return Promise.resolve(true);
    },
    applySnapshot(version: string, objects: Map<string, unknown>) {
      const t = now();
      for (const key of sim.objects.keys()) if (!objects.has(key) && watched(key)) observe(site, key, null, t);
      for (const [key, value] of objects)
        if (watched(key) && JSON.stringify(sim.objects.get(key)) !== JSON.stringify(value))
          observe(site, key, markerOf(key, value) ?? null, t);
      sim.objects = new Map(objects);
      sim.version = version;
      sim.events.push(['snapshot', version]);
      return Promise.resolve();
    },
  });

  const reply = (msg: object) => process.send!(msg);
  process.on('message', (msg: ToChild) => {
    void (async () => {
      switch (msg.type) {
        case 'start':
          for (const { site, token } of msg.sites) {
            const sim: Sim = { version: undefined, objects: new Map(), events: [], skipped: 0 };
            sims.set(site, sim);
            // Each simulated site presents a key of its own, as a real site does (secrets get sealed for it).
            const { publicKey } = generateSiteKey();
            sim.sync = startSiteSync({
              url: msg.url,
              site,
              token,
              target: target(site, sim),
              publicKey: () => Promise.resolve(publicKey),
            });
          }
          reply({ rid: msg.rid });
          break;
        case 'expect':
          for (const [site, key, marker] of msg.items) {
            const k = site + '\n' + key;
            const seen = last.get(k);
            // Already applied (the change overtook this message)?
            if (
              seen &&
              seen.t >= msg.t0 &&
              (marker === null ? seen.marker === null : seen.marker === marker || markerIndex(seen.marker) >= msg.id)
            ) {
              results.push([msg.id, seen.t - msg.t0]);
              continue;
            }
            let list = pending.get(k);
            if (!list) pending.set(k, (list = []));
            list.push({ id: msg.id, t0: msg.t0, marker });
            pendingCount++;
          }
          break;
        case 'status': {
          let connected = 0;
          let synced = 0;
          for (const s of sims.values()) {
            if (s.sync?.connected()) connected++;
            if (s.version !== undefined) synced++;
          }
          let stuck = 0;
          for (const [k, list] of pending) if (isStuck(k, list)) stuck += list.length;
          const cpu = process.cpuUsage();
          const status: Status = {
            sites: sims.size,
            connected,
            synced,
            pending: pendingCount,
            stuck,
            bytes: bytes(),
            segments,
            cpuMs: (cpu.user + cpu.system) / 1000,
          };
          reply({ rid: msg.rid, status });
          break;
        }
        case 'results': {
          // At the end of a phase: an expectation whose object already holds the newest state
          // expected of it was folded (a later write reached the site in the same projection,
          // so there was no change to time); any other was never applied.
          let folded = 0;
          const unmet: Unmet[] = [];
          if (msg.final) {
            for (const [k, list] of pending) {
              const [site, key] = k.split('\n') as [string, string];
              if (!isStuck(k, list)) folded += list.length;
              else for (const p of list) unmet.push({ id: p.id, site, key, marker: p.marker, seen: holds(site, key) });
            }
            pending.clear();
            pendingCount = 0;
          }
          reply({ rid: msg.rid, results, folded, unmet });
          results = [];
          break;
        }
        case 'audit': {
          const audit: SiteAudit[] = [...sims].map(([site, s]) => ({
            site,
            events: s.events,
            skipped: s.skipped,
            digest: digest(s.objects),
            held: [...s.objects]
              .filter(([key]) => watched(key))
              .map(([key, value]): [string, string | null] => [key, markerOf(key, value) ?? null]),
          }));
          reply({ rid: msg.rid, audit });
          break;
        }
        case 'stop':
          await Promise.all([...sims.values()].map((s) => s.sync?.stop()));
          reply({ rid: msg.rid });
          break;
      }
    })().catch((err: unknown) => {
      // No reply will come: name the request that failed and end, instead of an unhandled rejection.
      process.stderr.write(`site process failed on ${msg.type}: ${err instanceof Error ? err.stack : String(err)}\n`);
      process.exit(1);
    });
  });
  process.send!({ ready: true });
}

// ---------------------------------------------------------------------------------------------
// The orchestrator

type Child = { proc: ChildProcess; sites: string[]; ask<T>(msg: Record<string, unknown>): Promise<T> };

let rid = 0;
function forkSites(): Promise<Child> {
  const proc = fork(new URL(import.meta.url).pathname, ['--sites'], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
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
        const timer = setTimeout(() => reject(new Error(`site process: no answer to ${String(msg.type)}`)), 60_000);
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

type Cp = { child: ChildProcess; url: string };

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

/** The built bundle in its own process, as a user starts it, on a fixed port (a restart reuses it). */
async function startControlPlane(redisUrl: string, port: number, dataDir: string, instance: number): Promise<Cp> {
  const bundle = join(process.cwd(), 'build', 'edgeplane.cjs');
  const args = PROFILE ? ['--cpu-prof', '--cpu-prof-dir', join(process.cwd(), 'profiles'), bundle] : [bundle];
  if (PROFILE) mkdirSync('profiles', { recursive: true });
  const child = spawn(process.execPath, args, {
    stdio: ['ignore', 'inherit', 'inherit'],
    env: {
      ...process.env,
      REDIS_URL: redisUrl,
      PORT: String(port),
      HOST: '127.0.0.1',
      SITE: 'hq',
      ADMIN_PASSWORD: PASSWORD,
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      BENCH_INSTANCE: String(instance),
    },
  });
  const url = `http://127.0.0.1:${port}`;
  await waitHealthy(child, url);
  return { child, url };
}

function procStat(pid: number): { cpuMs: number; rssMb: number } {
  const fields = (readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1] ?? '').split(' ');
  const rss = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return { cpuMs: (Number(fields[11]) + Number(fields[12])) * 10, rssMb: Number(rss ?? 0) / 1024 };
}

class Api {
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

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function percentile(xs: number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)]!;
}

/** The bench's model of the configuration: which sites each write concerns. */
type SiteModel = { region: number; group: number; marker: string };
type ExporterModel = { name: string; selector: string; marker: string };

function matches(selector: string, s: SiteModel, name: string): boolean {
  if (selector === 'all') return true;
  const [label, value] = selector.split('=') as [string, string];
  if (label === 'group') return `g${s.group}` === value;
  if (label === 'region') return `r${s.region}` === value;
  return label === 'system/name' && value === name;
}

const placementOf = (selector: string) =>
  selector === 'all' ? { 'all-sites': true } : { 'match-site-labels': selector };

const exporterBody = (e: ExporterModel) => ({
  name: e.name,
  topics: ['bench'],
  'site-placement': placementOf(e.selector),
  url: `http://127.0.0.1:9/${e.marker}`,
  data: '${MSG}',
});
const siteBody = (name: string, s: SiteModel) => ({
  name,
  type: 'edge',
  labels: { region: `r${s.region}`, group: `g${s.group}`, 'bench-w': s.marker },
});

async function main(): Promise<void> {
  const t00 = now();
  const bundle = join(process.cwd(), 'build', 'edgeplane.cjs');
  if (!existsSync(bundle) || process.env.BENCH_BUILD !== '0') {
    const b = spawnSync('npm', ['run', 'build', '--', '--bundle-only'], { stdio: 'inherit' });
    if (b.status !== 0) throw new Error('npm run build failed');
  }
  const redis = await startRedis();
  const port = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), 'edgeplane-bench-fleet-'));
  let cp = await startControlPlane(redis.url, port, dataDir, 1);
  const api = new Api(cp.url);
  await api.login();
  const children: Child[] = [];
  const rows: Array<[string, string, string]> = [];
  const row = (what: string, figure: string, note = '') => {
    rows.push([what, figure, note]);
    process.stdout.write(`  ${what}: ${figure}${note ? `  (${note})` : ''}\n`);
  };
  try {
    for (let i = 0; i < PROCS; i++) children.push(await forkSites());
    const owner = (site: string) => children[Number(site.slice(1)) % PROCS]!;
    const sites = new Map<string, SiteModel>();
    const exporters = new Map<string, ExporterModel>();
    let writeId = 0;
    const putMs = new Map<number, number>(); // write id → how long the API took to answer it

    /** Tells the site processes what write `id` must bring to which sites. */
    const expect = (id: number, t0: number, items: Item[]) => {
      const per = new Map<Child, Item[]>();
      for (const it of items) {
        const c = owner(it[0]);
        let l = per.get(c);
        if (!l) per.set(c, (l = []));
        l.push(it);
      }
      for (const [c, l] of per) c.proc.send({ type: 'expect', id, t0, items: l });
    };
    const status = async (): Promise<Status> => {
      const all = await Promise.all(children.map((c) => c.ask<{ status: Status }>({ type: 'status' })));
      const sum: Status = {
        sites: 0,
        connected: 0,
        synced: 0,
        pending: 0,
        stuck: 0,
        bytes: 0,
        segments: 0,
        cpuMs: 0,
      };
      for (const { status: s } of all) for (const k of Object.keys(sum) as Array<keyof Status>) sum[k] += s[k];
      return sum;
    };
    let folded = 0;
    const unmet: Unmet[] = [];
    /** The (write, ms) pairs measured so far; `final` ends the phase (see the site process). */
    const drain = async (final = true): Promise<Array<[number, number]>> => {
      const all = await Promise.all(
        children.map((c) =>
          c.ask<{ results: Array<[number, number]>; folded: number; unmet: Unmet[] }>({ type: 'results', final }),
        ),
      );
      for (const a of all) {
        folded += a.folded;
        unmet.push(...a.unmet);
      }
      return all.flatMap((a) => a.results);
    };
    /** Waits (bounded) until every concerned site holds what was last written; returns how many do not. */
    const settle = async (ms: number): Promise<number> => {
      const deadline = Date.now() + ms;
      let s = await status();
      while (s.stuck > 0 && Date.now() < deadline) {
        await sleep(100);
        s = await status();
      }
      await sleep(300); // the sites' last applies of a fold, if they come
      return (await status()).stuck;
    };

    // Writes, each with the expectations of the sites it concerns.
    const writeExporter = async (e: ExporterModel, selector: string): Promise<number> => {
      const id = ++writeId;
      const before = e.selector;
      e.selector = selector;
      e.marker = `w${id}`;
      const items: Item[] = [];
      for (const [name, s] of sites) {
        if (matches(selector, s, name)) items.push([name, exporterKey(e.name), e.marker]);
        else if (matches(before, s, name)) items.push([name, exporterKey(e.name), null]);
      }
      const t0 = now();
      expect(id, t0, items);
      await api.call('PUT', `/v1/config/volga/webhooks/${e.name}`, exporterBody(e));
      putMs.set(id, now() - t0);
      return id;
    };
    const moveSite = async (name: string, group: number): Promise<number> => {
      const id = ++writeId;
      const s = sites.get(name)!;
      const before = { ...s };
      s.group = group;
      s.marker = `w${id}`;
      const items: Item[] = [[name, siteKey(name), s.marker]];
      for (const e of exporters.values()) {
        const was = matches(e.selector, before, name);
        const is = matches(e.selector, s, name);
        if (is && !was) items.push([name, exporterKey(e.name), e.marker]);
        if (was && !is) items.push([name, exporterKey(e.name), null]);
      }
      const t0 = now();
      expect(id, t0, items);
      await api.call('PUT', `/v1/config/sites/${name}`, siteBody(name, s));
      putMs.set(id, now() - t0);
      return id;
    };

    // ---- 1. baselines -------------------------------------------------------------------------
    process.stdout.write(`baselines\n`);
    {
      const a = createClient({ url: redis.url });
      const b = createClient({ url: redis.url });
      await a.connect();
      await b.connect();
      const rtts: number[] = [];
      let lastId = '$';
      for (let i = 0; i < 200; i++) {
        const read = b.xRead({ key: 'bench:rtt', id: lastId }, { BLOCK: 5000, COUNT: 1 });
        await sleep(2);
        const t0 = performance.now();
        await a.xAdd('bench:rtt', '*', { i: String(i) });
        const r = (await read) as Array<{ messages: Array<{ id: string }> }> | null;
        rtts.push(performance.now() - t0);
        lastId = r?.[0]?.messages[0]?.id ?? lastId;
      }
      await a.del('bench:rtt');
      await a.close();
      await b.close();
      row(
        'raw Redis XADD → XREAD BLOCK',
        `p50 ${percentile(rtts, 50).toFixed(2)} ms, p99 ${percentile(rtts, 99).toFixed(2)} ms`,
        '200 round trips',
      );
    }
    const first = siteName(0);
    sites.set(first, { region: 0, group: 0, marker: 'w0' });
    await api.call('PUT', `/v1/config/sites/${first}`, siteBody(first, sites.get(first)!));
    const firstToken = ((await api.call('POST', `/v1/state/sites/${first}/issue-token`)) as { token: string }).token;
    owner(first).sites.push(first);
    await owner(first).ask({ type: 'start', url: cp.url, sites: [{ site: first, token: firstToken }] });
    const solo: ExporterModel = { name: 'solo', selector: `system/name=${first}`, marker: 'w0' };
    exporters.set(solo.name, solo);
    await writeExporter(solo, solo.selector);
    if ((await settle(10_000)) > 0) throw new Error('the first site did not sync');
    await drain();
    const baseIds: number[] = [];
    for (let i = 0; i < BASE_WRITES; i++) {
      const t = now();
      baseIds.push(await writeExporter(solo, solo.selector));
      await sleep(Math.max(0, 1000 / RATE - (now() - t)));
    }
    await settle(10_000);
    const base = (await drain()).filter(([id]) => baseIds.includes(id)).map(([, ms]) => ms);
    const baseP50 = percentile(base, 50);
    const baseP99 = percentile(base, 99);
    row(
      'commit → applied, 1 site (baseline)',
      `p50 ${baseP50.toFixed(1)} ms, p99 ${baseP99.toFixed(1)} ms`,
      `${base.length}/${BASE_WRITES} writes at ${RATE}/s; the PUT itself p50 ${percentile(
        baseIds.map((id) => putMs.get(id) ?? NaN),
        50,
      ).toFixed(1)} ms`,
    );

    // ---- 2. the fleet ---------------------------------------------------------------------------
    process.stdout.write(`creating ${SITES - 1} more sites, ${EXPORTERS} exporters, ${SITES} tokens\n`);
    for (let i = 1; i < SITES; i++) sites.set(siteName(i), { region: i % REGIONS, group: i % GROUPS, marker: 'w0' });
    const names = [...sites.keys()].slice(1);
    for (let i = 0; i < names.length; i += 100) {
      const docs = names
        .slice(i, i + 100)
        .map((n) => ({ 'x-path': `/v1/config/sites/${n}`, ...siteBody(n, sites.get(n)!) }));
      await api.call('PATCH', '/v1/config', docs);
    }
    for (let k = 0; k < EXPORTERS; k++) {
      // Three in four placed on a group (~SITES/50 sites), one in four on a region (~SITES/10).
      const selector = k % 4 === 3 ? `region=r${k % REGIONS}` : `group=g${k % GROUPS}`;
      const e: ExporterModel = { name: `x${k}`, selector, marker: 'w0' };
      exporters.set(e.name, e);
      await api.call('PUT', `/v1/config/volga/webhooks/${e.name}`, exporterBody(e));
    }
    const tokens = new Map<string, string>();
    for (let i = 0; i < names.length; i += 16)
      await Promise.all(
        names.slice(i, i + 16).map(async (n) => {
          tokens.set(n, ((await api.call('POST', `/v1/state/sites/${n}/issue-token`)) as { token: string }).token);
        }),
      );
    await sleep(2000);
    const idle0 = procStat(cp.child.pid!);
    process.stdout.write(`connecting ${names.length} sites in ${PROCS} processes\n`);
    const tConnect = now();
    for (const c of children) {
      const mine = names.filter((n) => owner(n) === c);
      c.sites.push(...mine);
      await c.ask({ type: 'start', url: cp.url, sites: mine.map((site) => ({ site, token: tokens.get(site)! })) });
    }
    let st = await status();
    for (let i = 0; i < 1200 && (st.connected < SITES || st.synced < SITES); i++) {
      await sleep(100);
      st = await status();
    }
    row(
      `${SITES} sites connected and synced`,
      `${((now() - tConnect) / 1000).toFixed(1)} s`,
      `${st.connected} connected, ${st.synced} with a snapshot`,
    );
    await sleep(3000);
    const idle1 = procStat(cp.child.pid!);
    row(
      'control-plane RSS',
      `${idle0.rssMb.toFixed(0)} → ${idle1.rssMb.toFixed(0)} MB`,
      `${(((idle1.rssMb - idle0.rssMb) * 1024) / (SITES - 1)).toFixed(1)} KiB per connected site`,
    );

    // ---- 3. one change to every site ------------------------------------------------------------
    const everywhere: ExporterModel = { name: 'everywhere', selector: 'all', marker: 'w0' };
    exporters.set(everywhere.name, everywhere);
    const allFigures: number[] = [];
    const allCpu: number[] = [];
    const allSiteCpu: number[] = [];
    for (let round = 0; round <= ALL_ROUNDS; round++) {
      const cpu0 = procStat(cp.child.pid!).cpuMs;
      const sites0 = (await status()).cpuMs;
      const id = await writeExporter(everywhere, 'all');
      const left = await settle(20_000);
      const got = (await drain()).filter(([w]) => w === id).map(([, ms]) => ms);
      // Round 0 creates the exporter everywhere; the measured rounds change it.
      if (round > 0) {
        allFigures.push(left > 0 ? Infinity : Math.max(...got));
        allCpu.push(procStat(cp.child.pid!).cpuMs - cpu0);
        allSiteCpu.push((await status()).cpuMs - sites0);
      }
      await sleep(500);
    }
    const allWorst = Math.max(...allFigures);
    row(
      `one change to all ${SITES} sites, fully applied`,
      `${allFigures.map((x) => x.toFixed(0)).join(', ')} ms`,
      `goal < 1000 ms: ${allWorst < 1000 ? 'met' : 'NOT met'}; ${(allWorst / baseP50).toFixed(1)} × the 1-site p50`,
    );
    row(
      'CPU time of one change to all sites',
      `control plane ${percentile(allCpu, 50).toFixed(0)} ms, site processes ${percentile(allSiteCpu, 50).toFixed(0)} ms`,
      `median of ${ALL_ROUNDS}; the wall time above is this CPU time when the machine has cores to spare`,
    );

    // ---- 4. churn -------------------------------------------------------------------------------
    process.stdout.write(`churn: ${RATE} writes/s for ${CHURN_SECONDS} s\n`);
    const churnIds = new Set<number>();
    const cpuChurn0 = procStat(cp.child.pid!);
    const tChurn = now();
    const total = Math.round(RATE * CHURN_SECONDS);
    let lateWrites = 0;
    for (let i = 0; i < total; i++) {
      const due = tChurn + (i * 1000) / RATE;
      if (now() < due) await sleep(due - now());
      else if (now() - due > 1000 / RATE) lateWrites++;
      const kind = i % 10;
      const e = exporters.get(`x${i % EXPORTERS}`)!;
      if (kind < 6) churnIds.add(await writeExporter(e, e.selector));
      else if (kind < 8) {
        const [label] = e.selector.split('=') as [string];
        const next = label === 'region' ? `region=r${(i * 7) % REGIONS}` : `group=g${(i * 7) % GROUPS}`;
        churnIds.add(await writeExporter(e, next));
      } else churnIds.add(await moveSite(siteName(1 + ((i * 37) % (SITES - 1))), (i * 13) % GROUPS));
    }
    const churnSeconds = (now() - tChurn) / 1000;
    const cpuChurn1 = procStat(cp.child.pid!);
    const churnLeft = await settle(20_000);
    const folded0 = folded;
    const churn = (await drain()).filter(([id]) => churnIds.has(id)).map(([, ms]) => ms);
    const p50 = percentile(churn, 50);
    const p99 = percentile(churn, 99);
    row(
      'commit → applied at every site concerned',
      `p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms`,
      `goal p99 < 500 ms: ${p99 < 500 && churnLeft === 0 ? 'met' : 'NOT met'}; ${churn.length} site-applies of ${total} writes in ${churnSeconds.toFixed(1)} s (${(total / churnSeconds).toFixed(1)}/s, ${lateWrites} late)${folded > folded0 ? `, ${folded - folded0} folded into a later write` : ''}${churnLeft ? `, ${churnLeft} never applied` : ''}; p99 ${(p99 / baseP99).toFixed(1)} × the 1-site p99; the PUT itself p50 ${percentile(
        [...churnIds].map((id) => putMs.get(id) ?? NaN),
        50,
      ).toFixed(1)} ms`,
    );
    row(
      'control-plane CPU during churn',
      `${(((cpuChurn1.cpuMs - cpuChurn0.cpuMs) / (churnSeconds * 1000)) * 100).toFixed(0)} % of a core`,
      `${((cpuChurn1.cpuMs - cpuChurn0.cpuMs) / total).toFixed(1)} ms per write`,
    );

    // ---- 5. idle ----------------------------------------------------------------------------------
    process.stdout.write(`idle for ${IDLE_SECONDS} s\n`);
    await sleep(2000);
    const idleA = await status();
    const cpA = procStat(cp.child.pid!);
    const tIdle = now();
    await sleep(IDLE_SECONDS * 1000);
    const idleB = await status();
    const cpB = procStat(cp.child.pid!);
    const idleS = (now() - tIdle) / 1000;
    const bitsPerSite = ((idleB.bytes - idleA.bytes) * 8) / idleS / SITES;
    // On the wire add 66 bytes of Ethernet/IP/TCP headers per segment read and one ACK back.
    const segs = idleB.segments - idleA.segments;
    const wireBits = ((idleB.bytes - idleA.bytes + segs * 2 * 66) * 8) / idleS / SITES;
    row(
      'idle traffic per site',
      `${bitsPerSite.toFixed(1)} bit/s payload, ~${wireBits.toFixed(0)} bit/s with TCP/IP headers`,
      `goal < 1000 bit/s: ${wireBits < 1000 ? 'met' : 'NOT met'}; counted at the sites' sockets over ${idleS.toFixed(0)} s`,
    );
    const idleCpuPct = ((cpB.cpuMs - cpA.cpuMs) / (idleS * 1000)) * 100;
    row(
      'control-plane CPU, idle',
      `${idleCpuPct.toFixed(1)} % of a core`,
      `${(((cpB.cpuMs - cpA.cpuMs) / idleS / SITES) * 1000).toFixed(1)} µs/s per connected site; RSS ${cpB.rssMb.toFixed(0)} MB`,
    );

    // ---- 6. kill -9 and restart -------------------------------------------------------------------
    process.stdout.write(`control-plane kill and restart\n`);
    const lastIds: number[] = [];
    for (let i = 0; i < 5; i++) {
      const e = exporters.get(`x${i}`)!;
      lastIds.push(await writeExporter(e, e.selector));
    }
    const exited = new Promise((r) => cp.child.once('exit', r));
    cp.child.kill(PROFILE ? 'SIGTERM' : 'SIGKILL');
    await exited;
    const tKill = now();
    let down = await status();
    for (let i = 0; i < 100 && down.connected > 0; i++) {
      await sleep(50);
      down = await status();
    }
    const tRestart = now();
    cp = await startControlPlane(redis.url, port, dataDir, 2);
    const tListening = now();
    let up = await status();
    let tAll = 0;
    for (let i = 0; i < 600; i++) {
      if (up.connected === SITES && tAll === 0) tAll = now();
      if (tAll && up.stuck === 0) break;
      await sleep(100);
      up = await status();
    }
    const tApplied = now();
    const resumed = tAll ? (tAll - tRestart) / 1000 : Infinity;
    row(
      `control-plane restart → all ${SITES} sites resumed`,
      `${resumed.toFixed(1)} s`,
      `goal < 30 s: ${resumed < 30 ? 'met' : 'NOT met'}; from the restart (process listening after ${((tListening - tRestart) / 1000).toFixed(1)} s; down ${((tRestart - tKill) / 1000).toFixed(1)} s); writes made before the kill applied everywhere ${up.stuck === 0 ? `after ${((tApplied - tRestart) / 1000).toFixed(1)} s` : `NOT (${up.stuck} pending)`}`,
    );
    await api.login();
    for (let i = 0; i < 5; i++) {
      const e = exporters.get(`x${i + 5}`)!;
      await writeExporter(e, e.selector);
    }
    const afterLeft = await settle(20_000);
    await drain();

    // ---- 7. audit ---------------------------------------------------------------------------------
    const rc = createClient({ url: redis.url });
    await rc.connect();
    let lost = 0;
    let repeated = 0;
    let differ = 0;
    let skipped = 0;
    const answers = await Promise.all(children.map((c) => c.ask<{ audit: SiteAudit[] }>({ type: 'audit' })));
    const audits = answers.flatMap((a) => a.audit);
    for (const u of unmet.slice(0, 10))
      process.stdout.write(
        `  never applied: write w${u.id} at ${u.site}: ${u.key} → ${u.marker ?? 'absent'} (last seen ${u.seen === undefined ? 'nothing' : (u.seen ?? 'absent')})\n`,
      );
    let unlikeModel = 0;
    for (const a of audits) {
      skipped += a.skipped;
      // What the bench wrote: this site's object and the exporters whose selector matches it.
      const model = sites.get(a.site)!;
      const want = [[siteKey(a.site), model.marker]];
      for (const e of exporters.values())
        if (matches(e.selector, model, a.site)) want.push([exporterKey(e.name), e.marker]);
      const wanted = want
        .map(([k, m]) => `${k}=${m}`)
        .sort()
        .join();
      const held = a.held
        .map(([k, m]) => `${k}=${m}`)
        .sort()
        .join();
      if (wanted !== held) {
        if (unlikeModel++ < 5) process.stdout.write(`  ${a.site} holds ${held}\n  but was written ${wanted}\n`);
      }
      const vs = a.events.map(([, v]) => v);
      for (let i = 1; i < vs.length; i++) if (compareVersions(vs[i]!, vs[i - 1]!) <= 0) repeated++;
      let from = -1;
      a.events.forEach(([kind], i) => {
        if (kind === 'snapshot') from = i;
      });
      if (from < 0) {
        lost++;
        continue;
      }
      const after = a.events.slice(from + 1).map(([, v]) => v);
      const log = (await rc.xRange(`ep:fleet:${a.site}:log`, `(${a.events[from]![1]}`, '+')).map((r) => r.id);
      if (log.join() !== after.join()) lost++;
      const set = await rc.hGetAll(`ep:fleet:${a.site}:set`);
      if (digest(Object.entries(set).map(([k, v]) => [k, JSON.parse(v) as unknown])) !== a.digest) differ++;
    }
    await rc.close();
    const snapshots = audits.reduce((n, a) => n + a.events.filter(([k]) => k === 'snapshot').length, 0);
    row(
      'no change lost or repeated',
      lost + repeated + differ + unlikeModel === 0 && afterLeft === 0 ? 'yes' : 'NO',
      `${audits.length} sites: ${unlikeModel} unlike what was written, ${lost} with a gap, ${repeated} versions applied out of order or twice, ${differ} copies unlike the control plane's set; ${snapshots} snapshots, ${skipped} redelivered versions skipped`,
    );

    // ---- figures ----------------------------------------------------------------------------------
    const w = [0, 0];
    for (const [a, b] of rows) {
      w[0] = Math.max(w[0]!, a.length);
      w[1] = Math.max(w[1]!, b.length);
    }
    process.stdout.write(
      `\nfleet bench: ${SITES} sites in ${PROCS} processes, control plane = build/edgeplane.cjs on redis-server; ` +
        `machine: ${cpus().length} cores shared with other work; ${((now() - t00) / 1000).toFixed(0)} s\n`,
    );
    for (const [a, b, c] of rows) process.stdout.write(`${a.padEnd(w[0]!)}  ${b.padEnd(w[1]!)}  ${c}\n`);
  } finally {
    await Promise.all(children.map((c) => c.ask({ type: 'stop' }).catch(() => undefined)));
    for (const c of children) c.proc.kill();
    if (cp.child.exitCode === null) {
      const exited = new Promise((r) => cp.child.once('exit', r));
      cp.child.kill('SIGTERM');
      await exited;
    }
    await redis.stop();
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
