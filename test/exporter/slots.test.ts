/**
 * The exporter's in-flight slots (src/exporter/slots.ts): a free slot is reported at once, a
 * full set waits for a release, each release wakes one waiter, and stop releases every wait.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Slots } from '../../src/exporter/slots.js';

const tick = () => new Promise<void>((r) => setImmediate(r));

test('free resolves at once below the limit; take and release count', async () => {
  const s = new Slots(() => 2);
  assert.not.ok(s.full);
  await s.free();
  s.take();
  s.take();
  assert.ok(s.full);
  assert.is(s.used, 2);
  s.release();
  assert.is(s.used, 1);
  assert.not.ok(s.full);
});

test('a full set waits for a release; each release wakes one waiter, which checks again', async () => {
  const s = new Slots(() => 1);
  s.take();
  const woke: string[] = [];
  const a = s.free().then(() => {
    woke.push('a');
    s.take();
  });
  const b = s.free().then(() => {
    woke.push('b');
    s.take();
  });
  await tick();
  assert.equal(woke, []);
  s.release();
  await a;
  await tick();
  assert.equal(woke, ['a'], 'b woke, found the slot taken by a, and waits again');
  s.release();
  await b;
  assert.equal(woke, ['a', 'b']);
  assert.is(s.used, 1);
});

test('the limit is read at each check (max-in-flight auto grows and shrinks)', async () => {
  let limit = 1;
  const s = new Slots(() => limit);
  s.take();
  assert.ok(s.full);
  limit = 2;
  assert.not.ok(s.full);
  await s.free();
});

test('stop resolves every wait, now and later', async () => {
  const s = new Slots(() => 1);
  s.take();
  const waiting = [s.free(), s.released()];
  s.stop();
  await Promise.all(waiting);
  await s.free();
  await s.released();
  assert.is(s.used, 1);
});

test.run();
