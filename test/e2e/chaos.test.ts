/**
 * The fault-injection suite (scripts/chaos.ts, `npm run chaos`) in its short form: every
 * scenario with small numbers. The full form is run by hand; its table is in the README.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runChaos, table } from '../../scripts/chaos.js';
import { setLogLevel } from '../../src/lib/log.js';

test('chaos, short form: kills, Redis restart, webhook outage, failover, torn lines, SIGTERM', async () => {
  setLogLevel('warn');
  const rows = await runChaos({
    messages: 2000,
    kills: 2,
    maxInFlight: 16,
    outageSeconds: 3,
    redisMessages: 1000,
    failoverMessages: 1000,
    outageMessages: 50,
    sigtermMessages: 24,
    only: [],
  });
  process.stdout.write(table(rows));
  assert.is(rows.length, 6);
  for (const r of rows) assert.ok(r.ok, `${r.scenario}: ${r.figures}`);
});

test.run();
