/**
 * CONTRACT §10 failover, on a real Sentinel set (a primary, a replica, three sentinels): the
 * product as a user runs it (`worker.ts` in its own process, REDIS_SENTINELS), configuration
 * written without pause while the primary is killed with kill -9. Every write answered 2xx is
 * there afterwards (it waited for the replica), the login token issued before the failover
 * still works, and the process writes again without a restart. The resume time after the
 * promotion is printed, not asserted (no timing assertions).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startSentinelSet } from '../helpers/redis-deployments.js';
import { startServe } from '../helpers/serve-proc.js';

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

test.run();
