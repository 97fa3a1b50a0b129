/**
 * CONTRACT §10 failover, on a real Sentinel set (a primary, a replica, three sentinels): the
 * product as a user runs it (`worker.ts` in its own process, REDIS_SENTINELS), the primary
 * killed with kill -9 (a) while configuration is written without pause: every write answered
 * 2xx is there afterwards (it waited for the replica), the login token issued before the
 * failover still works, the process writes again without a restart; (b) while an exporter
 * delivers a produced stream: every message a replica confirmed is delivered, duplicates
 * counted and within the README's bound. Resume time and rates are printed, not asserted.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { redisClient, send } from '../../src/lib/redis.js';
import { startSentinelSet } from '../helpers/redis-deployments.js';
import { startServe } from '../helpers/serve-proc.js';
import { startWebhookServer } from '../helpers/webhook-server.js';
import { eventually } from '../helpers/wait.js';

const password = 'failover-test-password';

test('Sentinel: config churn through a kill -9 of the primary; every 2xx write survives', async () => {
  const set = await startSentinelSet();
  const p = startServe({
    ...set.env,
    PORT: '0',
    ADMIN_PASSWORD: password,
    DATA_DIR: mkdtempSync(join(tmpdir(), 'edgeplane-failover-')),
  });
  try {
    const api = `http://127.0.0.1:${await p.listening(60_000)}`;
    const login = await fetch(`${api}/v1/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'admin', password }),
    });
    assert.is(login.status, 200);
    const auth = { authorization: `Bearer ${((await login.json()) as { token: string }).token}` };
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
        const old = await set.killPrimary();
        failover = set.waitPromoted(old, 60_000).then(() => {
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
      `sentinel failover: ${acked.length} writes acknowledged, refused by status ${JSON.stringify(Object.fromEntries(refused))}, ` +
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

test('Sentinel: exporter delivery at ~1,000 msg/s through a kill -9 of the primary; nothing lost', async () => {
  const set = await startSentinelSet();
  const sink = await startWebhookServer();
  const maxInFlight = 8;
  const p = startServe({
    ...set.env,
    PORT: '0',
    ADMIN_PASSWORD: password,
    DATA_DIR: mkdtempSync(join(tmpdir(), 'edgeplane-failover-')),
  });
  const producer = redisClient({ kind: 'sentinel', sentinels: set.sentinels, master: set.master }, 'test-producer');
  try {
    const api = `http://127.0.0.1:${await p.listening(60_000)}`;
    const login = await fetch(`${api}/v1/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'admin', password }),
    });
    const auth = { authorization: `Bearer ${((await login.json()) as { token: string }).token}` };
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
    await send(producer, ['XADD', 'volga:flow', '*', 'payload', 'seq-warmup']);
    await sink.waitFor((r) => r.some((x) => x.body.includes('seq-warmup')), 'the exporter delivers', 60_000);

    // The producer keeps to 1 message per ms since the start (~1,000 msg/s, batches of up to
    // 200, pipelined); a batch counts as produced once a replica confirmed it (WAIT), as a
    // produce answered 2xx would.
    const produced: number[] = [];
    let seq = 0;
    let killedAt = 0;
    let failover: Promise<number> | undefined;
    const started = Date.now();
    while (Date.now() - started < 8000) {
      if (!failover && Date.now() - started > 2500) {
        failover = set.killPrimary().then((old) => {
          killedAt = Date.now();
          return set.waitPromoted(old, 60_000);
        });
      }
      const due = Math.min(200, Date.now() - started - seq);
      const batch = Array.from({ length: Math.max(1, due) }, () => seq++);
      try {
        await Promise.all(batch.map((n) => send(producer, ['XADD', 'volga:flow', '*', 'payload', `seq-${n}`])));
        if (Number(await send(producer, ['WAIT', '1', '1000'])) >= 1) produced.push(...batch);
      } catch {
        /* not produced: the failover */
      }
      await new Promise((r) => setTimeout(r, 10));
    }
    const windowS = (Date.now() - started) / 1000;
    const inWindow = produced.length;
    await failover;
    const seen = () => {
      const counts = new Map<number, number>();
      for (const r of sink.delivered()) {
        const m = /seq-(\d+)/.exec(r.body);
        if (m) counts.set(Number(m[1]), (counts.get(Number(m[1])) ?? 0) + 1);
      }
      return counts;
    };
    await eventually(() => produced.every((n) => seen().has(n)), 'every produced message delivered', 120_000);
    const counts = seen();
    const duplicates = [...counts.values()].reduce((s, c) => s + c - 1, 0);
    const rate = Math.round(inWindow / windowS);
    process.stdout.write(
      `sentinel exporter failover: ${produced.length} produced and confirmed by the replica in ${windowS.toFixed(1)} s (${rate}/s, the failover included), all delivered, ${duplicates} duplicates\n`,
    );
    // README bound: what was in flight plus the acknowledgements of the last second before the
    // kill that had not reached the replica (at most a second of traffic at 1,000 msg/s).
    assert.ok(duplicates <= 1000 + maxInFlight, `${duplicates} duplicates`);
    assert.ok(killedAt > 0);
  } finally {
    await producer.destroy();
    p.kill('SIGKILL');
    await p.exited(10_000).catch(() => undefined);
    await sink.close();
    await set.dispose();
  }
});

test.run();
