/**
 * Topic discovery's pacing (src/bus/discovery.ts), with an injected clock and timer: the wait
 * after a pass is 1.5 s, or ten times the pass's own duration when that is longer (a SCAN of a
 * large keyspace); listeners are told the set only when it changed; the last listener leaving
 * cancels the scheduled pass and a new one starts the passes again. The passes against real
 * backends are in backends.test.ts.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Discovery, discoveryIntervalMs, discoveryPace, type PassTimer } from '../../src/bus/discovery.js';

/** A fake clock and timer: `waits` are the delays asked for; `fire()` runs the scheduled pass. */
function fakeTimer() {
  let now = 0;
  const waits: number[] = [];
  let scheduled: (() => void) | undefined;
  const timer: PassTimer = {
    now: () => now,
    after(ms, run) {
      waits.push(ms);
      scheduled = run;
      return { cancel: () => (scheduled = undefined) };
    },
  };
  return {
    timer,
    waits,
    advance: (ms: number) => (now += ms),
    pending: () => scheduled !== undefined,
    /** Runs the scheduled pass and lets its listing settle. */
    async fire() {
      const run = scheduled;
      scheduled = undefined;
      assert.ok(run, 'a pass is scheduled');
      run();
      for (let i = 0; i < 5; i++) await Promise.resolve();
    },
  };
}

const settle = async () => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

test('the wait after a pass is 1.5 s, or ten times a slow pass', async () => {
  const f = fakeTimer();
  const durations = [10, 400, 3000, 50];
  let calls = 0;
  const d = new Discovery(async () => {
    f.advance(durations[calls++] ?? 10);
    return ['a'];
  }, f.timer);
  const off = d.onTopics(() => {});
  await settle();
  for (let i = 1; i < durations.length; i++) await f.fire();
  assert.is(calls, 4);
  assert.equal(f.waits, [discoveryIntervalMs, 400 * discoveryPace, 3000 * discoveryPace, discoveryIntervalMs]);
  off();
});

test('listeners are told the set when it changes, not on every pass', async () => {
  const f = fakeTimer();
  const lists = [['a'], ['a'], ['a', 'b'], ['b', 'a']];
  let calls = 0;
  const d = new Discovery(async () => lists[Math.min(calls++, lists.length - 1)]!, f.timer);
  const seen: string[][] = [];
  const off = d.onTopics((t) => seen.push([...t].sort()));
  await settle();
  for (let i = 1; i < lists.length; i++) await f.fire();
  assert.equal(seen, [['a'], ['a', 'b']]);
  // A later listener is told the current set at once.
  const late: string[][] = [];
  const off2 = d.onTopics((t) => late.push([...t].sort()));
  assert.equal(late, [['a', 'b']]);
  off2();
  off();
});

test('the last listener leaving cancels the next pass; a new listener starts the passes again', async () => {
  const f = fakeTimer();
  let calls = 0;
  const d = new Discovery(async () => (calls++, ['a']), f.timer);
  const off = d.onTopics(() => {});
  await settle();
  assert.is(calls, 1);
  assert.ok(f.pending());
  off();
  assert.not.ok(f.pending());
  const seen: string[][] = [];
  const off2 = d.onTopics((t) => seen.push([...t]));
  await settle();
  assert.is(calls, 2);
  assert.equal(seen, [['a']]);
  assert.ok(f.pending());
  d.close();
  assert.not.ok(f.pending());
  off2();
});

test('a failing listing is retried at the next pass', async () => {
  const f = fakeTimer();
  let calls = 0;
  const d = new Discovery(async () => {
    if (calls++ === 0) throw new Error('unavailable');
    return ['a'];
  }, f.timer);
  const seen: string[][] = [];
  const off = d.onTopics((t) => seen.push([...t]));
  await settle();
  assert.equal(seen, []);
  await f.fire();
  assert.equal(seen, [['a']]);
  off();
});

test.run();
