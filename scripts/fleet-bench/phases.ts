/**
 * The phases of `npm run bench:fleet`, one function each, in the order main runs them (see the
 * header of bench-fleet.ts). Each takes the shared Bench and adds its rows.
 */
import { cpus } from 'node:os';
import { createClient } from 'redis';
import { compareVersions } from '../../src/fleet/common/protocol.js';
import {
  ALL_ROUNDS,
  BASE_WRITES,
  CHURN_IN_FLIGHT,
  CHURN_SECONDS,
  CPS,
  digest,
  EXPORTERS,
  exporterBody,
  exporterKey,
  goals,
  GROUPS,
  IDLE_SECONDS,
  matches,
  now,
  percentile,
  PROFILE,
  RATE,
  REGIONS,
  siteBody,
  SITES,
  siteKey,
  siteName,
  sleep,
  type ExporterModel,
  type SiteAudit,
} from './common.js';
import { Api, loadAverage, logReader, probeMemory, startControlPlane, type Bench } from './harness.js';

const met = (ok: boolean) => (ok ? 'met' : 'NOT met');

/** Phase 1: a raw Redis XADD → XREAD BLOCK round trip, then commit → applied with one site. */
export async function baselines(b: Bench): Promise<void> {
  process.stdout.write(`baselines\n`);
  const url = await b.deployment.primaryUrl();
  const a = createClient({ url });
  const r = createClient({ url });
  await a.connect();
  await r.connect();
  const rtts: number[] = [];
  let lastId = '$';
  for (let i = 0; i < 200; i++) {
    const read = r.xRead({ key: 'bench:{ep}:rtt', id: lastId }, { BLOCK: 5000, COUNT: 1 });
    await sleep(2);
    const t0 = performance.now();
    await a.xAdd('bench:{ep}:rtt', '*', { i: String(i) });
    const got = (await read) as Array<{ messages: Array<{ id: string }> }> | null;
    rtts.push(performance.now() - t0);
    lastId = got?.[0]?.messages[0]?.id ?? lastId;
  }
  await a.del('bench:{ep}:rtt');
  await a.close();
  await r.close();
  b.row(
    'raw Redis XADD → XREAD BLOCK',
    `p50 ${percentile(rtts, 50).toFixed(2)} ms, p99 ${percentile(rtts, 99).toFixed(2)} ms`,
    '200 round trips',
  );
  const first = siteName(0);
  b.sites.set(first, { region: 0, group: 0, marker: 'w0' });
  await b.api.call('PUT', `/v1/config/sites/${first}`, siteBody(first, b.sites.get(first)!));
  const token = ((await b.api.call('POST', `/v1/state/sites/${first}/issue-token`)) as { token: string }).token;
  await b.connect(new Map([[first, token]]));
  const solo: ExporterModel = { name: 'solo', selector: `system/name=${first}`, marker: 'w0' };
  b.exporters.set(solo.name, solo);
  await b.writeExporter(solo, solo.selector);
  if ((await b.settle(10_000)) > 0) throw new Error('the first site did not sync');
  await b.drain();
  const ids: number[] = [];
  for (let i = 0; i < BASE_WRITES; i++) {
    const t = now();
    ids.push(await b.writeExporter(solo, solo.selector));
    await sleep(Math.max(0, 1000 / RATE - (now() - t)));
  }
  await b.settle(10_000);
  const base = (await b.drain()).filter(([id]) => ids.includes(id)).map(([, ms]) => ms);
  b.base = { p50: percentile(base, 50), p99: percentile(base, 99) };
  const put = percentile(
    ids.map((id) => b.putMs.get(id) ?? NaN),
    50,
  );
  b.row(
    'commit → applied, 1 site (baseline)',
    `p50 ${b.base.p50.toFixed(1)} ms, p99 ${b.base.p99.toFixed(1)} ms`,
    `${base.length}/${BASE_WRITES} writes at ${RATE}/s; the PUT itself p50 ${put.toFixed(1)} ms`,
  );
}

/** Phase 2: the other sites and 40 exporters are created, every site connects; memory per site. */
export async function fleet(b: Bench): Promise<void> {
  process.stdout.write(`creating ${SITES - 1} more sites, ${EXPORTERS} exporters, ${SITES - 1} tokens\n`);
  for (let i = 1; i < SITES; i++) b.sites.set(siteName(i), { region: i % REGIONS, group: i % GROUPS, marker: 'w0' });
  const names = [...b.sites.keys()].slice(1);
  for (let i = 0; i < names.length; i += 100) {
    const docs = names
      .slice(i, i + 100)
      .map((n) => ({ 'x-path': `/v1/config/sites/${n}`, ...siteBody(n, b.sites.get(n)!) }));
    await b.api.call('PATCH', '/v1/config', docs);
  }
  for (let k = 0; k < EXPORTERS; k++) {
    // Three in four placed on a group (~SITES/50 sites), one in four on a region (~SITES/10).
    const selector = k % 4 === 3 ? `region=r${k % REGIONS}` : `group=g${k % GROUPS}`;
    const e: ExporterModel = { name: `x${k}`, selector, marker: 'w0' };
    b.exporters.set(e.name, e);
    await b.api.call('PUT', `/v1/config/volga/webhooks/${e.name}`, exporterBody(e));
  }
  const tokens = new Map<string, string>();
  for (let i = 0; i < names.length; i += 16)
    await Promise.all(
      names.slice(i, i + 16).map(async (n) => {
        tokens.set(n, ((await b.api.call('POST', `/v1/state/sites/${n}/issue-token`)) as { token: string }).token);
      }),
    );
  await sleep(2000);
  const before = b.cpStat();
  const heapBefore = await Promise.all(b.cps.map(probeMemory));
  process.stdout.write(
    `connecting ${names.length} sites in ${b.children.length} processes to ${CPS} control plane(s)\n`,
  );
  const t = now();
  await b.connect(tokens);
  let st = await b.status();
  for (let i = 0; i < 3000 && (st.connected < SITES || st.synced < SITES); i++) {
    await sleep(100);
    st = await b.status();
    if (i % 50 === 49)
      process.stdout.write(`  ${((now() - t) / 1000).toFixed(0)} s: ${st.connected} connected, ${st.synced} synced\n`);
  }
  b.row(
    `${SITES} sites connected and synced`,
    `${((now() - t) / 1000).toFixed(1)} s`,
    `${st.connected} connected, ${st.synced} with a snapshot; load ${loadAverage()}`,
  );
  await sleep(3000);
  const after = b.cpStat();
  const sum = (xs: Array<{ heapUsed: number; external: number }>, k: 'heapUsed' | 'external') =>
    xs.reduce((n, x) => n + x[k], 0);
  // Live memory after a full GC (memory-probe.cjs): the heap and the buffers outside it, three
  // times 10 s apart (one probe may catch something passing: with two control planes one of four
  // held ~6 MB more than those 10 s before and after); the median is the figure, all three printed.
  const probes: Array<{ heapKib: number; extKib: number; heapMb: number }> = [];
  for (let i = 0; i < 3; i++) {
    if (i > 0) await sleep(10_000);
    const heapAfter = await Promise.all(b.cps.map(probeMemory));
    probes.push({
      heapKib: (sum(heapAfter, 'heapUsed') - sum(heapBefore, 'heapUsed')) / 1024 / (SITES - 1),
      extKib: (sum(heapAfter, 'external') - sum(heapBefore, 'external')) / 1024 / (SITES - 1),
      heapMb: sum(heapAfter, 'heapUsed') / 2 ** 20,
    });
  }
  const { heapKib, extKib, heapMb } = [...probes].sort((x, y) => x.heapKib - y.heapKib)[1]!;
  const kib = ((after.rssMb - before.rssMb) * 1024) / (SITES - 1);
  b.row(
    'control-plane memory per connected site',
    `${heapKib.toFixed(1)} KiB of heap`,
    `goal ≤ ${goals.kibPerSite} KiB: ${met(heapKib <= goals.kibPerSite)}; the median of three probes 10 s apart (${probes.map((p) => p.heapKib.toFixed(1)).join(', ')} KiB): live heap after a full GC ${(sum(heapBefore, 'heapUsed') / 2 ** 20).toFixed(0)} → ${heapMb.toFixed(0)} MB, outside the heap ${extKib.toFixed(1)} KiB a site; RSS ${kib.toFixed(1)} KiB a site (${before.rssMb.toFixed(0)} → ${after.rssMb.toFixed(0)} MB${CPS > 1 ? ` over ${CPS} processes` : ''})`,
  );
}

/** Phase 3: one change to every site (an exporter placed on all sites), ALL_ROUNDS times. */
export async function allSites(b: Bench): Promise<void> {
  const everywhere: ExporterModel = { name: 'everywhere', selector: 'all', marker: 'w0' };
  b.exporters.set(everywhere.name, everywhere);
  const walls: number[] = [];
  const cpCpu: number[] = [];
  const siteCpu: number[] = [];
  for (let round = 0; round <= ALL_ROUNDS; round++) {
    const cpu0 = b.cpStat().cpuMs;
    const sites0 = (await b.status()).cpuMs;
    const id = await b.writeExporter(everywhere, 'all');
    const left = await b.settle(60_000);
    const got = (await b.drain()).filter(([w]) => w === id).map(([, ms]) => ms);
    // Round 0 creates the exporter everywhere; the measured rounds change it.
    if (round > 0) {
      walls.push(left > 0 ? Infinity : Math.max(...got));
      cpCpu.push(b.cpStat().cpuMs - cpu0);
      siteCpu.push((await b.status()).cpuMs - sites0);
    }
    await sleep(500);
  }
  const worst = Math.max(...walls);
  b.row(
    `one change to all ${SITES} sites, fully applied`,
    `${walls.map((x) => x.toFixed(0)).join(', ')} ms`,
    `goal < ${goals.allSitesMs} ms: ${met(worst < goals.allSitesMs)}; ${(worst / b.base.p50).toFixed(1)} × the 1-site p50; load ${loadAverage()}`,
  );
  b.row(
    'CPU time of one change to all sites',
    `control plane ${percentile(cpCpu, 50).toFixed(0)} ms, site processes ${percentile(siteCpu, 50).toFixed(0)} ms`,
    `median of ${ALL_ROUNDS}; the wall time above is this CPU time when the machine has cores to spare`,
  );
}

/** Phase 4: RATE writes/s for CHURN_SECONDS (exporter updates and moves, sites moved); commit → applied. */
export async function churn(b: Bench): Promise<void> {
  process.stdout.write(`churn: ${RATE} writes/s for ${CHURN_SECONDS} s\n`);
  const ids = new Set<number>();
  const cpu0 = b.cpStat();
  const sites0 = (await b.status()).cpuMs;
  const t = now();
  const total = Math.round(RATE * CHURN_SECONDS);
  let late = 0;
  // Open loop, as independent writers are: each write leaves at its time, without waiting for
  // the one before to be answered (up to CHURN_IN_FLIGHT answers outstanding; 1 = closed loop).
  const inFlight = new Set<Promise<void>>();
  for (let i = 0; i < total; i++) {
    const due = t + (i * 1000) / RATE;
    if (now() < due) await sleep(due - now());
    while (inFlight.size >= CHURN_IN_FLIGHT) await Promise.race(inFlight);
    if (now() - due > 1000 / RATE) late++;
    const kind = i % 10;
    const e = b.exporters.get(`x${i % EXPORTERS}`)!;
    // The bench's model of labels and selectors moves here, in the order the writes leave.
    let write: Promise<number>;
    if (kind < 6) write = b.writeExporter(e, e.selector);
    else if (kind < 8) {
      const [label] = e.selector.split('=') as [string];
      const next = label === 'region' ? `region=r${(i * 7) % REGIONS}` : `group=g${(i * 7) % GROUPS}`;
      write = b.writeExporter(e, next);
    } else write = b.moveSite(siteName(1 + ((i * 37) % (SITES - 1))), (i * 13) % GROUPS);
    const p: Promise<void> = write.then((id) => void ids.add(id)).finally(() => inFlight.delete(p));
    inFlight.add(p);
  }
  await Promise.all(inFlight);
  const seconds = (now() - t) / 1000;
  const cpu1 = b.cpStat();
  const load = loadAverage();
  const left = await b.settle(30_000);
  // What the sites spent on it, up to the last apply (settle waited for it).
  const siteMs = (await b.status()).cpuMs - sites0;
  const cpSettled = b.cpStat().cpuMs - cpu0.cpuMs;
  const folded0 = b.folded;
  const got = (await b.drain()).filter(([id]) => ids.has(id)).map(([, ms]) => ms);
  const p50 = percentile(got, 50);
  const p99 = percentile(got, 99);
  const put = percentile(
    [...ids].map((id) => b.putMs.get(id) ?? NaN),
    50,
  );
  const folded = b.folded > folded0 ? `, ${b.folded - folded0} folded into a later write` : '';
  b.row(
    'commit → applied at every site concerned',
    `p50 ${p50.toFixed(1)} ms, p99 ${p99.toFixed(1)} ms`,
    `goal p99 < ${goals.churnP99Ms} ms: ${met(p99 < goals.churnP99Ms && left === 0)}; ${got.length} site-applies of ${total} writes in ${seconds.toFixed(1)} s (${(total / seconds).toFixed(1)}/s, ${late} late)${folded}${left ? `, ${left} never applied` : ''}; p99 ${(p99 / b.base.p99).toFixed(1)} × the 1-site p99; the PUT itself p50 ${put.toFixed(1)} ms; load ${load}`,
  );
  b.row(
    'control-plane CPU during churn',
    `${(((cpu1.cpuMs - cpu0.cpuMs) / (seconds * 1000)) * 100).toFixed(0)} % of a core`,
    `${((cpu1.cpuMs - cpu0.cpuMs) / total).toFixed(1)} ms per write`,
  );
  // The CPU the asked rate needs: control plane and simulated sites, a write each, until applied.
  const cores = (RATE * (cpSettled + siteMs)) / total / 1000;
  b.row(
    'CPU a churn write needs, control plane + sites',
    `${(cpSettled / total).toFixed(1)} + ${(siteMs / total).toFixed(1)} ms (the sites ${((siteMs / Math.max(1, got.length)) * 1000).toFixed(0)} µs a site-apply)`,
    `${RATE} writes/s would take ${cores.toFixed(2)} cores besides Redis and the bench (this machine: ${cpus().length})`,
  );
}

/** TCP/IP on the wire: 66 bytes of Ethernet/IP/TCP headers a segment; a connection's handshake and close are 7 segments. */
const headerBytes = 66;

/** Phase 5: idle for IDLE_SECONDS: what each site's sockets carry, the control plane's CPU. */
export async function idle(b: Bench): Promise<void> {
  process.stdout.write(`idle for ${IDLE_SECONDS} s\n`);
  await sleep(2000);
  const a = await b.status();
  const cpA = b.cpStat();
  const t = now();
  await sleep(IDLE_SECONDS * 1000);
  const z = await b.status();
  const cpZ = b.cpStat();
  const s = (now() - t) / 1000;
  const payload = z.bytes - a.bytes;
  const bits = (payload * 8) / s / SITES;
  // Each segment read is answered by an ACK (both counted with headers); each new connection
  // adds its handshake and close.
  const wire = payload + (z.segments - a.segments) * 2 * headerBytes + (z.connects - a.connects) * 7 * headerBytes;
  const wireBits = (wire * 8) / s / SITES;
  b.row(
    'idle traffic per site',
    `${bits.toFixed(1)} bit/s payload, ~${wireBits.toFixed(0)} bit/s with TCP/IP headers`,
    `goal < ${goals.idleBitPerSite} bit/s: ${met(wireBits < goals.idleBitPerSite)}; counted at the sites' sockets over ${s.toFixed(0)} s: ${z.segments - a.segments} segments read, ${z.connects - a.connects} new connections`,
  );
  b.row(
    'control-plane CPU, idle',
    `${(((cpZ.cpuMs - cpA.cpuMs) / (s * 1000)) * 100).toFixed(1)} % of a core`,
    `${(((cpZ.cpuMs - cpA.cpuMs) / s / SITES) * 1000).toFixed(1)} µs/s per connected site; RSS ${cpZ.rssMb.toFixed(0)} MB`,
  );
}

/**
 * API reads and writes while the sites reconnect, until stopped: a GET of a site's state and of
 * an exporter (10 a second) and an exporter PUT (4 a second, with expectations: the sites must
 * catch up with them too). Returns the latencies and the errors.
 */
function apiDuringStorm(
  b: Bench,
  api: Api,
): { stop(): Promise<{ reads: number[]; writes: number[]; errors: number }> } {
  let stopped = false;
  const reads: number[] = [];
  const writes: number[] = [];
  let errors = 0;
  const timed = async (into: number[], f: () => Promise<unknown>) => {
    const t = now();
    try {
      await f();
      into.push(now() - t);
    } catch {
      errors++;
    }
  };
  const reader = (async () => {
    for (let i = 0; !stopped && i < 100_000; i++) {
      const t = now();
      await timed(reads, () =>
        i % 2
          ? api.call('GET', `/v1/state/sites/${siteName(1 + (i % (SITES - 1)))}`)
          : api.call('GET', '/v1/config/volga/webhooks/x1'),
      );
      await sleep(Math.max(0, 100 - (now() - t)));
    }
  })();
  const writer = (async () => {
    for (let i = 0; !stopped && i < 100_000; i++) {
      const t = now();
      const e = b.exporters.get(`x${10 + (i % 5)}`)!;
      await timed(writes, () => b.writeExporter(e, e.selector, api));
      await sleep(Math.max(0, 250 - (now() - t)));
    }
  })();
  return {
    async stop() {
      stopped = true;
      await Promise.all([reader, writer]);
      return { reads, writes, errors };
    },
  };
}

/** Phase 6: kill -9 of every control-plane process right after a few writes; restart; time to caught up. */
export async function restart(b: Bench): Promise<void> {
  process.stdout.write(`control-plane kill -9 and restart\n`);
  for (let i = 0; i < 5; i++) {
    const e = b.exporters.get(`x${i}`)!;
    await b.writeExporter(e, e.selector);
  }
  const beforeKill = b.writeId;
  const old = b.cps;
  await Promise.all(
    old.map((cp) => {
      const exited = new Promise((r) => cp.child.once('exit', r));
      cp.child.kill(PROFILE ? 'SIGTERM' : 'SIGKILL');
      return exited;
    }),
  );
  const tKill = now();
  let down = await b.status();
  for (let i = 0; i < 100 && down.connected > 0; i++) {
    await sleep(50);
    down = await b.status();
  }
  const tRestart = now();
  b.cps = await Promise.all(old.map((cp) => startControlPlane(b.deployment.env, cp.port, cp.dataDir, cp.instance)));
  const tListening = now();
  const api = new Api(b.cps[0]!.url);
  await api.login();
  const load = apiDuringStorm(b, api);
  // Caught up: every site holds the writes made before the kill (the storm's own writes, still
  // coming, are waited for after it ends).
  let up = await b.status(beforeKill);
  let tAll = 0;
  for (let i = 0; i < 1200; i++) {
    if (up.connected === SITES && tAll === 0) tAll = now();
    if (tAll && up.stuck === 0) break;
    await sleep(100);
    up = await b.status(beforeKill);
  }
  const tCaught = now();
  const caught = tAll !== 0 && up.stuck === 0;
  const storm = await load.stop();
  const caughtUp = await b.settle(30_000);
  // From the kill: the sites noticing, the restart (a service manager's at once), the storm.
  const resumed = caught ? (tCaught - tKill) / 1000 : Infinity;
  const since = (t: number) => (t ? ((t - tKill) / 1000).toFixed(1) : '–');
  b.row(
    `control-plane kill -9 → all ${SITES} sites reconnected and caught up`,
    `${resumed.toFixed(1)} s`,
    `goal < ${goals.resumeS} s: ${met(resumed < goals.resumeS)}; ${CPS} process(es) killed, restarted after ${since(tRestart)} s, listening after ${since(tListening)} s, all sites connected after ${since(tAll)} s; the storm's own writes ${caughtUp === 0 ? 'all applied' : `${caughtUp} not applied`} 30 s after; load ${loadAverage()}`,
  );
  b.row(
    'API during the reconnection storm',
    `reads p50 ${percentile(storm.reads, 50).toFixed(1)} ms, p99 ${percentile(storm.reads, 99).toFixed(1)} ms; writes p50 ${percentile(storm.writes, 50).toFixed(1)} ms, p99 ${percentile(storm.writes, 99).toFixed(1)} ms`,
    `${storm.reads.length} reads, ${storm.writes.length} exporter PUTs (their sites caught up too), ${storm.errors} errors`,
  );
  await b.api.login().catch(() => undefined);
  b.api.url = b.cps[0]!.url;
  await b.api.login();
  for (let i = 0; i < 5; i++) {
    const e = b.exporters.get(`x${i + 5}`)!;
    await b.writeExporter(e, e.selector);
  }
  b.afterLeft = await b.settle(30_000);
  await b.drain();
}

/** Phase 7: each site applied its log's entries after its snapshot once and in order, and holds the control plane's set. */
export async function audit(b: Bench): Promise<void> {
  const rc = await logReader(b.deployment);
  let lost = 0;
  let repeated = 0;
  let differ = 0;
  let skipped = 0;
  const answers = await Promise.all(b.children.map((c) => c.ask<{ audit: SiteAudit[] }>({ type: 'audit' })));
  const audits = answers.flatMap((a) => a.audit);
  for (const u of b.unmet.slice(0, 10))
    process.stdout.write(
      `  never applied: write w${u.id} at ${u.site}: ${u.key} → ${u.marker ?? 'absent'} (last seen ${u.seen === undefined ? 'nothing' : (u.seen ?? 'absent')})\n`,
    );
  let unlikeModel = 0;
  for (const a of audits) {
    skipped += a.skipped;
    // What the bench wrote: this site's object and the exporters whose selector matches it.
    const model = b.sites.get(a.site)!;
    const want = [[siteKey(a.site), model.marker]];
    for (const e of b.exporters.values())
      if (matches(e.selector, model, a.site)) want.push([exporterKey(e.name), e.marker]);
    const wanted = want
      .map(([k, m]) => `${k}=${m}`)
      .sort()
      .join();
    const held = a.held
      .map(([k, m]) => `${k}=${m}`)
      .sort()
      .join();
    if (wanted !== held && unlikeModel++ < 5)
      process.stdout.write(`  ${a.site} holds ${held}\n  but was written ${wanted}\n`);
    const vs = a.events.map(([, v]) => v);
    for (let i = 1; i < vs.length; i++) if (compareVersions(vs[i]!, vs[i - 1]!) <= 0) repeated++;
    const from = a.events.map(([kind]) => kind).lastIndexOf('snapshot');
    if (from < 0) {
      lost++;
      continue;
    }
    const after = a.events.slice(from + 1).map(([, v]) => v);
    const snapshotAt = a.events[from]![1];
    const log = (await rc.log(a.site)).filter((id) => compareVersions(id, snapshotAt) > 0);
    if (log.join() !== after.join()) lost++;
    const set = await rc.set(a.site);
    if (digest(Object.entries(set).map(([k, v]) => [k, JSON.parse(v) as unknown])) !== a.digest) differ++;
  }
  await rc.close();
  const snapshots = audits.reduce((n, a) => n + a.events.filter(([k]) => k === 'snapshot').length, 0);
  b.row(
    'no change lost or repeated',
    lost + repeated + differ + unlikeModel === 0 && b.afterLeft === 0 ? 'yes' : 'NO',
    `${audits.length} sites: ${unlikeModel} unlike what was written, ${lost} with a gap, ${repeated} versions applied out of order or twice, ${differ} copies unlike the control plane's set; ${snapshots} snapshots, ${skipped} redelivered versions skipped`,
  );
}

/** The figures, as a table. */
export function printFigures(b: Bench): void {
  const w = [0, 0];
  for (const [x, y] of b.rows) {
    w[0] = Math.max(w[0]!, x.length);
    w[1] = Math.max(w[1]!, y.length);
  }
  process.stdout.write(
    `\nfleet bench: ${SITES} sites in ${b.children.length} processes, ${CPS} control-plane process(es) = build/edgeplane.cjs on ${b.deployment.kind} Redis; ` +
      `machine: ${cpus().length} cores shared with other work, load ${loadAverage()} at the end; ${((now() - b.t00) / 1000).toFixed(0)} s\n`,
  );
  for (const [x, y, z] of b.rows) process.stdout.write(`${x.padEnd(w[0]!)}  ${y.padEnd(w[1]!)}  ${z}\n`);
}
