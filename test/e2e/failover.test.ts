/**
 * CONTRACT §10 failover, on a real Sentinel set (a primary, a replica, three sentinels) and on a
 * real Redis Cluster (three primaries, three replicas; the primary of the slot that matters is
 * the one killed): the product as a user runs it (`worker.ts` in its own process,
 * REDIS_SENTINELS or REDIS_CLUSTER), the primary killed with kill -9 (a) while configuration is written without pause: every write answered
 * 2xx is there afterwards (it waited for the replica), the login token issued before the
 * failover still works, the process writes again without a restart; (b) while an exporter
 * delivers a produced stream: every message a replica confirmed is delivered, duplicates
 * counted and within the README's bound; (c) under a control plane with 100 connected edge
 * sites (the real site sync loop each, simulated in one process: test/helpers/sim-sites.ts)
 * during configuration writes: every site ends with exactly the objects the control plane
 * projected for it, each entry of its log applied once and in order, and a `site=` read after
 * the failover is answered live by the site (the relay between control-plane processes
 * follows the new primary). Resume times after the promotion and rates are printed, not asserted.
 *
 * Scale: FAILOVER_SITES (default 100) simulated sites in (c); the producer of (b), a process
 * of its own, aims at FAILOVER_RATE messages a second (default 1,000; what it reaches is printed).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { redisClient, send, type RedisTarget } from '../../src/lib/redis.js';
import { spawnApiProc, type ApiProc } from '../helpers/api-proc.js';
import { client, SITE_WAIT } from '../helpers/fleet.js';
import { startRedisCluster, startSentinelSet } from '../helpers/redis-deployments.js';
import { startServe } from '../helpers/serve-proc.js';
import { startProducer, type ProducerRun } from '../helpers/producer-proc.js';
import { startWebhookServer } from '../helpers/webhook-server.js';
import { startSimSites, type SimSite, type SimSites } from '../helpers/sim-sites.js';
import { eventually } from '../helpers/wait.js';

const password = 'failover-test-password';

/** A deployment with replicas, as the failover tests need it. */
type Deployment = {
  name: string;
  env: Record<string, string>;
  target: RedisTarget;
  /** kill -9 of the primary serving `key` (Sentinel: the one primary); its port. */
  killPrimary(key: string): Promise<number>;
  /** Resolves once a replica serves `key` in place of the killed `old`. */
  waitPromoted(key: string, old: number, timeoutMs: number): Promise<number>;
  dispose(): Promise<void>;
};

async function sentinel(): Promise<Deployment> {
  const set = await startSentinelSet();
  return {
    name: 'Sentinel',
    env: set.env,
    target: { kind: 'sentinel', sentinels: set.sentinels, master: set.master },
    killPrimary: () => set.killPrimary(),
    waitPromoted: (_key, old, timeoutMs) => set.waitPromoted(old, timeoutMs),
    dispose: () => set.dispose(),
  };
}

async function cluster(): Promise<Deployment> {
  const c = await startRedisCluster();
  return {
    name: 'Cluster',
    env: c.env,
    target: { kind: 'cluster', nodes: c.nodes },
    killPrimary: (key) => c.killPrimaryOf(key),
    waitPromoted: (key, old, timeoutMs) => c.waitPromoted(key, old, timeoutMs),
    dispose: () => c.stop(),
  };
}

/** The admin's Authorization header at `api` (a login). */
async function adminAuth(api: string): Promise<{ authorization: string }> {
  const login = await fetch(`${api}/v1/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'admin', password }),
  });
  assert.is(login.status, 200);
  return { authorization: `Bearer ${((await login.json()) as { token: string }).token}` };
}

/** The configuration store's slot on Cluster (its hash tag), the one primary on Sentinel. */
const configKey = '{ep}:rev';
const siteCount = Math.max(1, Number(process.env.FAILOVER_SITES ?? 100));
const produceRate = Math.max(1, Number(process.env.FAILOVER_RATE ?? 1000));
/** FAILOVER_ONLY=c (or ab, ...): some of the three scenarios only (all by default). */
const only = process.env.FAILOVER_ONLY ?? 'abc';
const scenario = (letter: string) => (only.includes(letter) ? test : test.skip);

/** FAILOVER_DEPLOYMENTS=sentinel (or cluster): one deployment only (both by default). */
const deployments = (process.env.FAILOVER_DEPLOYMENTS ?? 'sentinel,cluster').split(',');

for (const start of [sentinel, cluster].filter((d) => deployments.includes(d.name))) {
  scenario('a')(`${start.name}: config churn through a kill -9 of the primary; every 2xx write survives`, async () => {
    const set = await start();
    const p = startServe({
      ...set.env,
      PORT: '0',
      ADMIN_PASSWORD: password,
      DATA_DIR: mkdtempSync(join(tmpdir(), 'edgeplane-failover-')),
    });
    try {
      const api = `http://127.0.0.1:${await p.listening(60_000)}`;
      const auth = await adminAuth(api);
      const put = async (name: string): Promise<number> => {
        try {
          const res = await fetch(`${api}/v1/config/volga/webhooks/${name}`, {
            method: 'PUT',
            headers: { ...auth, 'content-type': 'application/json' },
            body: JSON.stringify({
              topics: ['churn'],
              'site-placement': { sites: ['elsewhere'] },
              url: 'http://127.0.0.1:9/hook',
              data: '${MSG}',
            }),
            signal: AbortSignal.timeout(20_000),
          });
          await res.arrayBuffer();
          return res.status;
        } catch {
          return 0; // no answer in time: not acknowledged
        }
      };

      const acked: string[] = [];
      const refused = new Map<number, number>();
      let promotedAt: number | undefined;
      let resumedAfterMs: number | undefined;
      let failover: Promise<void> | undefined;
      const started = Date.now();
      for (let i = 0; i < 2000 && Date.now() - started < 90_000; i++) {
        if (i === 20) {
          const old = await set.killPrimary(configKey);
          failover = set.waitPromoted(configKey, old, 60_000).then(() => {
            promotedAt = Date.now();
          });
        }
        const status = await put(`w-${i}`);
        if (status >= 200 && status < 300) {
          acked.push(`w-${i}`);
          if (promotedAt !== undefined && resumedAfterMs === undefined) resumedAfterMs = Date.now() - promotedAt;
        } else refused.set(status, (refused.get(status) ?? 0) + 1);
        if (resumedAfterMs !== undefined && acked.length >= 40) break;
      }
      await failover;
      process.stdout.write(
        `${set.name} failover: ${acked.length} writes acknowledged, refused by status ${JSON.stringify(Object.fromEntries(refused))}, ` +
          `first 2xx ${resumedAfterMs ?? 'never'} ms after the promotion\n`,
      );
      assert.ok(resumedAfterMs !== undefined, 'writes are acknowledged again after the promotion, without a restart');
      for (const name of acked) {
        const res = await fetch(`${api}/v1/config/volga/webhooks/${name}`, { headers: auth });
        assert.is(res.status, 200, `${name} was acknowledged, so it survives the failover`);
        await res.arrayBuffer();
      }
    } finally {
      p.kill('SIGKILL');
      await p.exited(10_000).catch(() => undefined);
      await set.dispose();
    }
  });

  scenario('b')(
    `${start.name}: exporter delivery at ~1,000 msg/s through a kill -9 of the primary; nothing lost`,
    async () => {
      const set = await start();
      const sink = await startWebhookServer();
      const maxInFlight = 8;
      const p = startServe({
        ...set.env,
        PORT: '0',
        ADMIN_PASSWORD: password,
        DATA_DIR: mkdtempSync(join(tmpdir(), 'edgeplane-failover-')),
      });
      const producer = redisClient(set.target, 'test-producer');
      let producing: ProducerRun | undefined;
      try {
        const api = `http://127.0.0.1:${await p.listening(60_000)}`;
        const auth = await adminAuth(api);
        const res = await fetch(`${api}/v1/config/volga/webhooks/flow`, {
          method: 'PUT',
          headers: { ...auth, 'content-type': 'application/json' },
          body: JSON.stringify({
            topics: ['flow'],
            'site-placement': { 'all-sites': true },
            url: `${sink.url}/hook`,
            data: '${MSG}',
            'max-in-flight': maxInFlight,
          }),
        });
        assert.is(res.status, 201, await res.text());
        await producer.connect();
        // A warm-up message a second until one is delivered: one written before the exporter's
        // consumer group exists (it starts after the PUT's answer) is not the exporter's to deliver.
        await eventually(
          async () => {
            await send(producer, ['XADD', 'volga:flow', '*', 'payload', 'warm-up']);
            return sink.delivered().some((x) => x.body.includes('warm-up'));
          },
          'the exporter delivers',
          { timeoutMs: 60_000, everyMs: 1000 },
        );

        // The producer (its own process, test/helpers/producer-proc.ts) keeps to FAILOVER_RATE
        // messages a second (default 1,000) for 15 s, pipelined; a batch counts as produced once
        // a replica confirmed it (WAIT on the stream's node), as a produce answered 2xx would.
        const run = startProducer(set.target, 'flow', produceRate, 15_000);
        producing = run;
        let killedAt = 0;
        let promotedAt = 0;
        let deliveredAtPromotion = 0;
        let resumedAfterMs: number | undefined;
        let failover: Promise<number> | undefined;
        let ended: { sent: number; ms: number } | undefined;
        let firstConfirmedAt = 0;
        void run.done.then((e) => (ended = e)).catch(() => undefined);
        const started = Date.now();
        while ((!ended || (promotedAt > 0 && resumedAfterMs === undefined)) && Date.now() - started < 60_000) {
          // The kill comes 2.5 s into the producer's confirmed traffic (its process takes a while to start).
          if (!failover && firstConfirmedAt === 0 && run.confirmed.length > 0) firstConfirmedAt = Date.now();
          if (!failover && firstConfirmedAt > 0 && Date.now() - firstConfirmedAt > 2500) {
            failover = set.killPrimary('volga:flow').then(async (old) => {
              killedAt = Date.now();
              const port = await set.waitPromoted('volga:flow', old, 60_000);
              deliveredAtPromotion = sink.delivered().length;
              promotedAt = Date.now();
              return port;
            });
          }
          // The exporter resumed: a delivery after the promotion.
          if (promotedAt > 0 && resumedAfterMs === undefined && sink.delivered().length > deliveredAtPromotion)
            resumedAfterMs = Date.now() - promotedAt;
          await new Promise((r) => setTimeout(r, 20));
        }
        const { sent, ms } = await run.done;
        const produced = run.confirmed;
        assert.ok(failover, 'the primary was killed while the producer was producing');
        await failover;
        assert.ok(produced.length > 0, 'the producer had messages confirmed');
        const seen = () => {
          const counts = new Map<number, number>();
          for (const r of sink.delivered()) {
            const m = /seq-(\d+)/.exec(r.body);
            if (m) counts.set(Number(m[1]), (counts.get(Number(m[1])) ?? 0) + 1);
          }
          return counts;
        };
        await eventually(
          () => {
            const delivered = seen(); // once per check: 15,000 messages, not 15,000 times
            return produced.every((n) => delivered.has(n));
          },
          'every produced message delivered',
          { timeoutMs: 120_000, everyMs: 250 },
        ).catch((err: unknown) => {
          const delivered = seen();
          const missing = produced.filter((n) => !delivered.has(n));
          throw new Error(
            `${String(err)}: ${missing.length} of ${produced.length} confirmed messages not delivered (seq ${missing.slice(0, 10).join(', ')}${missing.length > 10 ? ', …' : ''}; killed ${killedAt}, promoted ${promotedAt})`,
          );
        });
        const counts = seen();
        const duplicates = [...counts.values()].reduce((s, c) => s + c - 1, 0);
        const rate = Math.round((produced.length * 1000) / ms);
        process.stdout.write(
          `${set.name} exporter failover: ${sent} sent, ${produced.length} confirmed by the replica in ${(ms / 1000).toFixed(1)} s (${rate}/s, the failover included; aimed at ${produceRate}/s), all delivered, ${duplicates} duplicates, first delivery ${resumedAfterMs ?? 'not seen'} ms after the promotion\n`,
        );
        // README bound: what was in flight plus the acknowledgements of the last second before the
        // kill that had not reached the replica (at most a second of traffic at the produce rate).
        assert.ok(duplicates <= Math.max(1000, produceRate) + maxInFlight, `${duplicates} duplicates`);
        assert.ok(killedAt > 0);
      } finally {
        await producer.destroy();
        producing?.kill();
        p.kill('SIGKILL');
        await p.exited(10_000).catch(() => undefined);
        await sink.close();
        await set.dispose();
      }
    },
  );

  scenario('c')(
    `${start.name}: ${siteCount} connected sites catch up exactly through a kill -9 of the control plane primary`,
    async () => {
      const set = await start();
      const procs: ApiProc[] = [];
      let sims: SimSites | undefined;
      const audit = redisClient(set.target, 'test-audit');
      const t0 = Date.now();
      const stages: string[] = [];
      const stage = (what: string) => stages.push(`${what} ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      try {
        const cp = await spawnApiProc({
          ...set.env,
          PORT: '0',
          SITE: 'hq',
          ADMIN_PASSWORD: password,
          DATA_DIR: mkdtempSync(join(tmpdir(), 'edgeplane-failover-cp-')),
        });
        procs.push(cp);
        const admin = client(cp.url, password);
        const names = Array.from({ length: siteCount }, (_, i) => `edge-${i + 1}`);
        const created = await admin.call(
          'PATCH',
          '/v1/config',
          names.map((name) => ({ 'x-path': `/v1/config/sites/${name}`, name })),
        );
        assert.ok(created.status >= 200 && created.status < 300, created.text);
        const tokens = [];
        for (const site of names) {
          const t = await admin.call('POST', `/v1/state/sites/${site}/issue-token`);
          assert.is(t.status, 201, t.text);
          tokens.push({ site, token: (t.body as { token: string }).token });
        }
        // The sites: the real sync loop each, in a process of their own (test/helpers/sim-sites.ts).
        stage('sites created');
        const simSites = await startSimSites(cp.url, tokens);
        sims = simSites;
        await eventually(
          async () => (await simSites.dump()).every((s) => s.version !== undefined),
          `${siteCount} sites synced`,
          { timeoutMs: 120_000, everyMs: 250 },
        );
        const body = (i: number) => ({
          topics: ['fleet'],
          'site-placement': { 'all-sites': true },
          url: 'http://127.0.0.1:9/hook',
          data: `\${MSG} ${i}`,
        });
        stage('synced');
        const acked: string[] = [];
        let failover: Promise<number> | undefined;
        let promotedAt = 0;
        const webhooksOf = (s: SimSite) =>
          Object.keys(s.objects)
            .map((k) => /\/volga\/webhooks\/([^/]+)$/.exec(k)?.[1])
            .filter((n): n is string => n !== undefined)
            .sort();
        // The resume time: from the promotion until every site holds the first write acknowledged
        // after it (looked for beside the writes, every 100 ms, for up to 2 minutes).
        let firstAfter: string | undefined;
        let heldAt = 0;
        let writing = true;
        const watching = (async () => {
          for (let i = 0; i < 1200 && !heldAt && (writing || firstAfter); i++) {
            await new Promise((r) => setTimeout(r, 100));
            const name = firstAfter;
            if (name && (await simSites.dump()).every((s) => webhooksOf(s).includes(name))) heldAt = Date.now();
          }
        })();
        for (let i = 0; i < 60; i++) {
          if (i === 20)
            failover = set.killPrimary(configKey).then(async (old) => {
              const port = await set.waitPromoted(configKey, old, 60_000);
              promotedAt = Date.now();
              return port;
            });
          const r = await admin.call('PUT', `/v1/config/volga/webhooks/f-${i}`, body(i)).catch(() => undefined);
          if (r && r.status >= 200 && r.status < 300) {
            acked.push(`f-${i}`);
            if (promotedAt && !firstAfter) firstAfter = `f-${i}`;
          }
        }
        await failover;
        stage('written');
        // One more write after the promotion (the first, if none of the above came after it).
        await eventually(
          async () => {
            const r = await admin.call('PUT', '/v1/config/volga/webhooks/after', body(-1)).catch(() => undefined);
            return r?.status === 201 || r?.status === 200;
          },
          'a write after the promotion',
          { ...SITE_WAIT, timeoutMs: 60_000 },
        );
        acked.push('after');
        firstAfter ??= 'after';
        writing = false;
        await watching;
        assert.ok(heldAt > 0, `every site holds ${firstAfter}, the first write acknowledged after the promotion`);
        const resumedAfterMs = heldAt - promotedAt;
        stage('resumed');
        // A `site=` read after the failover: down a site's stream through the relay (Redis
        // pub/sub between control-plane processes), its answer back up the same way.
        let read: Awaited<ReturnType<typeof admin.call>> | undefined;
        await eventually(
          async () => {
            read = await admin.call('GET', '/v1/state/volga/topics?site=edge-1');
            return read.status === 200 && (read.body as { answeredBy?: string }).answeredBy === 'edge-1';
          },
          'a site= read answered live by the site after the failover (the relay follows the new primary)',
          { ...SITE_WAIT, timeoutMs: 30_000 },
        );
        // Exactly the control plane's objects at every site, each change applied once, in order.
        const cpList = await admin.call('GET', '/v1/config/volga/webhooks');
        assert.is(cpList.status, 200);
        const expected = (cpList.body as Array<{ name: string }>).map((w) => w.name).sort();
        for (const name of acked) assert.ok(expected.includes(name), `${name} was acknowledged, so it survives`);
        await audit.connect();
        let skipped = 0;
        await eventually(
          async () => (await simSites.dump()).every((s) => JSON.stringify(webhooksOf(s)) === JSON.stringify(expected)),
          `every site holds exactly the control plane's ${expected.length} webhooks`,
          { timeoutMs: 60_000, everyMs: 250 },
        );
        for (const s of await simSites.dump()) {
          const k = set.name === 'Cluster' ? `{${s.site}}` : s.site;
          const held = (await audit.hGetAll(`ep:fleet:${k}:set`)) as Record<string, string>;
          const want = Object.fromEntries(Object.entries(held).map(([key, v]) => [key, JSON.parse(v) as unknown]));
          assert.equal(s.objects, want, `${s.site} holds exactly what the control plane projected for it`);
          const from = s.applied.map(([kind]) => kind).lastIndexOf('snapshot');
          const after = s.applied[from]![1];
          const log = (await audit.xRange(`ep:fleet:${k}:log`, `(${after}`, '+')).map((e) => e.id);
          assert.equal(
            s.applied.slice(from + 1).map(([, v]) => v),
            log,
            `${s.site} applied every entry of its log after its snapshot once, in order`,
          );
          skipped += s.skipped;
        }
        process.stdout.write(
          `${set.name} fleet failover: ${acked.length} writes acknowledged, ${siteCount} sites caught up exactly ` +
            `(every site held ${firstAfter}, the first write acknowledged after the promotion, ${resumedAfterMs} ms after the promotion; ${skipped} entries sent again and skipped); ` +
            `site= read answered by ${(read?.body as { answeredBy?: string }).answeredBy}; ${stages.join(', ')}\n`,
        );
      } finally {
        await sims?.stop();
        await audit.destroy();
        for (const p of procs) p.child.kill('SIGKILL');
        await set.dispose();
      }
    },
  );
}

test.run();
