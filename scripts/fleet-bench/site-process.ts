/**
 * A site process of the fleet bench (bench-fleet.ts run with --sites): many simulated sites, each
 * the real sync loop (src/fleet/site/sync-loop.ts) applying what it receives to a copy in memory
 * (a SyncTarget). It counts the bytes and TCP connections of its sockets, and notes when each
 * site has applied what a write was expected to bring it.
 */
import type { Socket } from 'node:net';
import { createRequire } from 'node:module';
import { compareVersions } from '../../src/fleet/common/protocol.js';
import {
  ACKS,
  digest,
  markerIndex,
  markerOf,
  now,
  siteIndex,
  TENANT,
  type SiteAudit,
  type Status,
  type ToChild,
  type Unmet,
} from './common.js';

/**
 * Counts the bytes of every socket undici opens (TCP payload as the client sees it) by wrapping
 * net.connect before undici is loaded (it calls net.connect through the module). With
 * BENCH_SOURCE_ADDRESS set, every connection leaves from that loopback address (127.0.0.x), so
 * that many sites do not run out of ephemeral ports towards one control-plane port.
 */
function countSockets(): { bytes(): number; segments(): number; connects(): number } {
  const net = createRequire(import.meta.url)('node:net') as typeof import('node:net');
  const sockets = new Set<Socket>();
  const source = process.env.BENCH_SOURCE_ADDRESS;
  let closedBytes = 0;
  let segments = 0;
  let connects = 0;
  const original = net.connect.bind(net) as (...args: unknown[]) => Socket;
  (net as { connect: unknown }).connect = (...args: unknown[]) => {
    if (source && typeof args[0] === 'object' && args[0] !== null) args[0] = { ...args[0], localAddress: source };
    const s = original(...args);
    connects++;
    sockets.add(s);
    s.on('data', () => void segments++);
    s.once('close', () => {
      sockets.delete(s);
      closedBytes += s.bytesRead + s.bytesWritten;
    });
    return s;
  };
  return {
    bytes() {
      let n = closedBytes;
      for (const s of sockets) n += s.bytesRead + s.bytesWritten;
      return n;
    },
    segments: () => segments,
    connects: () => connects,
  };
}

type Sim = {
  version: string | undefined;
  objects: Map<string, unknown>;
  events: Array<['snapshot' | 'change', string]>;
  skipped: number;
  sync?: { connected(): boolean; stop(): Promise<void> };
};
type Pending = { id: number; t0: number; marker: string | null };

const watched = (key: string) => key.startsWith(`${TENANT}/sites/`) || key.startsWith(`${TENANT}/volga/webhooks/`);

/** The expectations of this process's sites and the latencies measured against them. */
class Tracker {
  readonly sims = new Map<string, Sim>();
  private pending = new Map<string, Pending[]>(); // site \n key → expectations, oldest first
  private last = new Map<string, { marker: string | null; t: number }>();
  pendingCount = 0;
  /** Expectations a later deletion superseded before the site's projection reached them (folded). */
  superseded = 0;
  results: Array<[number, number]> = []; // [write id, ms]

  private resolve(list: Pending[], i: number, t: number) {
    const p = list[i]!;
    this.results.push([p.id, t - p.t0]);
    list.splice(i, 1);
    this.pendingCount--;
  }

  /** Site `site` now holds `key` with `marker` (null: deleted), at time t. */
  observe(site: string, key: string, marker: string | null, t: number) {
    const k = site + '\n' + key;
    this.last.set(k, { marker, t });
    const list = this.pending.get(k);
    if (!list) return;
    if (marker === null) {
      // A deletion answers the oldest expectation of one; the writes expected before it were
      // folded into it (the site's projection came after the write that took the object away).
      const i = list.findIndex((p) => p.marker === null);
      if (i >= 0) {
        this.resolve(list, i, t);
        this.superseded += i;
        this.pendingCount -= i;
        list.splice(0, i);
      }
    } else {
      // This marker, or any write at or before it (folded into the same projection).
      for (let i = list.length - 1; i >= 0; i--)
        if (list[i]!.marker === marker || list[i]!.id <= markerIndex(marker)) this.resolve(list, i, t);
    }
    if (list.length === 0) this.pending.delete(k);
  }

  /** The marker `site` holds for `key` now (null: does not hold it). */
  holds(site: string, key: string): string | null {
    const v = this.sims.get(site)?.objects.get(key);
    return v === undefined ? null : (markerOf(key, v) ?? null);
  }

  private isStuck(k: string, list: Pending[]) {
    const [site, key] = k.split('\n') as [string, string];
    return this.holds(site, key) !== list[list.length - 1]!.marker;
  }

  expect(id: number, t0: number, items: Array<[string, string, string | null]>) {
    for (const [site, key, marker] of items) {
      const k = site + '\n' + key;
      const seen = this.last.get(k);
      // Already applied (the change overtook this message)?
      if (
        seen &&
        seen.t >= t0 &&
        (marker === null ? seen.marker === null : seen.marker === marker || markerIndex(seen.marker) >= id)
      ) {
        this.results.push([id, seen.t - t0]);
        continue;
      }
      let list = this.pending.get(k);
      if (!list) this.pending.set(k, (list = []));
      list.push({ id, t0, marker });
      this.pendingCount++;
    }
  }

  /**
   * Expectations whose site does not hold the newest state expected of their object; with
   * `upTo`, only those of writes up to that id, each met once the site holds that write or a
   * later one (later writes may still be arriving: a site that has them is caught up).
   */
  stuck(upTo?: number): number {
    let n = 0;
    for (const [k, list] of this.pending) {
      if (upTo === undefined) {
        if (this.isStuck(k, list)) n += list.length;
        continue;
      }
      const before = list.filter((p) => p.id <= upTo);
      const want = before[before.length - 1];
      if (!want) continue;
      const [site, key] = k.split('\n') as [string, string];
      const held = this.holds(site, key);
      const caught = want.marker === null ? held === null || markerIndex(held) > want.id : markerIndex(held) >= want.id;
      if (!caught) n += before.length;
    }
    return n;
  }

  /**
   * At the end of a phase: an expectation whose object already holds the newest state expected
   * of it was folded (a later write reached the site in the same projection, so there was no
   * change to time); any other was never applied.
   */
  endPhase(): { folded: number; unmet: Unmet[] } {
    let folded = this.superseded;
    this.superseded = 0;
    const unmet: Unmet[] = [];
    for (const [k, list] of this.pending) {
      const [site, key] = k.split('\n') as [string, string];
      if (!this.isStuck(k, list)) folded += list.length;
      else for (const p of list) unmet.push({ id: p.id, site, key, marker: p.marker, seen: this.holds(site, key) });
    }
    this.pending.clear();
    this.pendingCount = 0;
    return { folded, unmet };
  }
}

/** A simulated site's store: a map in memory, each apply noted by the tracker. */
function simTarget(tracker: Tracker, site: string, sim: Sim) {
  return {
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
        if (watched(c.key)) tracker.observe(site, c.key, c.op === 'put' ? (markerOf(c.key, c.value) ?? null) : null, t);
      }
      sim.version = version;
      sim.events.push(['change', version]);
      return Promise.resolve(true);
    },
    applySnapshot(version: string, objects: Map<string, unknown>) {
      const t = now();
      for (const key of sim.objects.keys()) if (!objects.has(key) && watched(key)) tracker.observe(site, key, null, t);
      for (const [key, value] of objects)
        if (watched(key) && JSON.stringify(sim.objects.get(key)) !== JSON.stringify(value))
          tracker.observe(site, key, markerOf(key, value) ?? null, t);
      sim.objects = new Map(objects);
      sim.version = version;
      sim.events.push(['snapshot', version]);
      return Promise.resolve();
    },
  };
}

function statusOf(tracker: Tracker, sockets: ReturnType<typeof countSockets>, upTo?: number): Status {
  let connected = 0;
  let synced = 0;
  for (const s of tracker.sims.values()) {
    if (s.sync?.connected()) connected++;
    if (s.version !== undefined) synced++;
  }
  const cpu = process.cpuUsage();
  return {
    sites: tracker.sims.size,
    connected,
    synced,
    pending: tracker.pendingCount,
    stuck: tracker.stuck(upTo),
    bytes: sockets.bytes(),
    segments: sockets.segments(),
    connects: sockets.connects(),
    cpuMs: (cpu.user + cpu.system) / 1000,
  };
}

function auditOf(tracker: Tracker): SiteAudit[] {
  return [...tracker.sims].map(([site, s]) => ({
    site,
    events: s.events,
    skipped: s.skipped,
    digest: digest(s.objects),
    held: [...s.objects]
      .filter(([key]) => watched(key))
      .map(([key, value]): [string, string | null] => [key, markerOf(key, value) ?? null]),
  }));
}

export async function siteProcess(): Promise<void> {
  const sockets = countSockets();
  const { startSiteSync } = await import('../../src/fleet/site/sync-loop.js');
  const { generateSiteKey } = await import('../../src/secrets/sealed.js');
  const { setLogLevel } = await import('../../src/lib/log.js');
  setLogLevel('error'); // a control-plane restart makes every site warn once
  const tracker = new Tracker();
  const reply = (msg: object): void => void process.send!(msg);

  const handle = async (msg: ToChild): Promise<void> => {
    switch (msg.type) {
      case 'start':
        for (const { site, token } of msg.sites) {
          const sim: Sim = { version: undefined, objects: new Map(), events: [], skipped: 0 };
          tracker.sims.set(site, sim);
          // Each simulated site presents a key of its own, as a real site does (secrets get sealed for it).
          const { publicKey } = generateSiteKey();
          sim.sync = startSiteSync({
            url: msg.urls[siteIndex(site) % msg.urls.length]!,
            site,
            token,
            target: simTarget(tracker, site, sim),
            publicKey: () => Promise.resolve(publicKey),
            acks: ACKS,
          });
        }
        return reply({ rid: msg.rid });
      case 'expect':
        return tracker.expect(msg.id, msg.t0, msg.items);
      case 'status':
        return reply({ rid: msg.rid, status: statusOf(tracker, sockets, msg.upTo) });
      case 'results': {
        const end = msg.final ? tracker.endPhase() : { folded: 0, unmet: [] };
        reply({ rid: msg.rid, results: tracker.results, ...end });
        tracker.results = [];
        return;
      }
      case 'audit':
        return reply({ rid: msg.rid, audit: auditOf(tracker) });
      case 'stop':
        await Promise.all([...tracker.sims.values()].map((s) => s.sync?.stop()));
        return reply({ rid: msg.rid });
    }
  };
  process.on('message', (msg: ToChild) => {
    handle(msg).catch((err: unknown) => {
      // No reply will come: name the request that failed and end, instead of an unhandled rejection.
      process.stderr.write(`site process failed on ${msg.type}: ${err instanceof Error ? err.stack : String(err)}\n`);
      process.exit(1);
    });
  });
  const profile = await startProfile();
  // The bench is gone (it ended or crashed): so is this process, with nothing left dialling.
  const end = () => void profile().finally(() => process.exit(0));
  process.once('disconnect', end);
  process.once('SIGTERM', end); // how the bench stops its site processes
  process.send!({ ready: true });
}

/**
 * BENCH_SITE_PROFILE=<directory>: this process's CPU profile (the inspector's, as --cpu-prof
 * writes it) from its start to the bench's end, written there as site-<pid>.cpuprofile.
 */
async function startProfile(): Promise<() => Promise<void>> {
  const dir = process.env.BENCH_SITE_PROFILE;
  if (!dir) return () => Promise.resolve();
  const { Session } = await import('node:inspector/promises');
  const { mkdirSync, writeFileSync } = await import('node:fs');
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  return async () => {
    const { profile } = await session.post('Profiler.stop');
    mkdirSync(dir, { recursive: true });
    writeFileSync(`${dir}/site-${process.pid}.cpuprofile`, JSON.stringify(profile));
  };
}
