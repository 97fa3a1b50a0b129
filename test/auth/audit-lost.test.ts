/**
 * Audit events that cannot be recorded (the bus down) are logged once, then once every 30 s with
 * how many went unlogged, not one error line per request; a recorded event starts over.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { record, type AuditEvent } from '../../src/auth/audit.js';
import { logsOf } from '../helpers/logs.js';

const event: AuditEvent = {
  time: '2026-11-29T10:00:00.000Z',
  user: 'admin',
  tenant: 'default',
  method: 'POST',
  path: '/v1/state/volga/topics/t/produce',
  status: 503,
  'client-address': '127.0.0.1',
};
const down = () => Promise.reject(new Error('Redis unreachable'));
const up = () => Promise.resolve();

test('a bus outage: one line for many lost events; a recorded one starts over', async () => {
  const lines = await logsOf(async () => {
    for (let i = 0; i < 50; i++) await record(down, event);
    await record(up, event);
    await record(down, event);
  });
  const lost = lines.filter((l) => l.msg === 'audit event not recorded');
  assert.is(lost.length, 2, JSON.stringify(lines));
  assert.is(lost[0]?.level, 'error');
});

test.run();
