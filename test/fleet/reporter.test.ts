/**
 * An edge site's state reports (src/fleet/site/reporter.ts) on a clock the test drives: changes
 * within the interval fold into one report, an unchanged state is not sent again, a connection
 * sends it in full anyway, and a report the control plane did not acknowledge goes again.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { JsonObject } from '../../src/lib/json.js';
import { startReporter } from '../../src/fleet/site/reporter.js';

function harness(minIntervalMs = 500) {
  let now = 1_000_000;
  let timers: Array<{ at: number; fn: () => void }> = [];
  let state: JsonObject = { tenants: { default: [] } };
  let ack = true;
  const sent: JsonObject[] = [];
  const reporter = startReporter({
    build: async () => state,
    send: async (r) => {
      sent.push(r);
      return ack;
    },
    minIntervalMs,
    now: () => now,
    setTimer: (fn, ms) => {
      const t = { at: now + ms, fn };
      timers.push(t);
      return () => {
        timers = timers.filter((x) => x !== t);
      };
    },
  });
  const settle = () => new Promise((r) => setImmediate(r));
  return {
    reporter,
    sent,
    set: (s: JsonObject) => {
      state = s;
    },
    nack: (v: boolean) => {
      ack = !v;
    },
    pending: () => timers.length,
    /** Moves the clock by `ms`, running each timer that falls due (bounded). */
    async advance(ms: number) {
      const until = now + ms;
      for (let i = 0; i < 1000; i++) {
        await settle();
        const due = timers.filter((t) => t.at <= until).sort((a, b) => a.at - b.at)[0];
        if (!due) break;
        timers = timers.filter((t) => t !== due);
        now = Math.max(now, due.at);
        due.fn();
        await settle();
      }
      now = until;
      await settle();
    },
  };
}

test('a connection sends the state at once; changes within the interval fold into one report', async () => {
  const h = harness(500);
  h.reporter.connected();
  await h.advance(0);
  assert.is(h.sent.length, 1);
  for (let i = 1; i <= 50; i++) {
    h.set({ tenants: { default: [{ path: 'volga/webhooks/w', value: { delivered: i }, config: [] }] } });
    h.reporter.changed();
  }
  await h.advance(499);
  assert.is(h.sent.length, 1, 'nothing before the interval is over');
  await h.advance(1);
  assert.is(h.sent.length, 2, 'one report for fifty changes');
  assert.equal(h.sent[1], {
    tenants: { default: [{ path: 'volga/webhooks/w', value: { delivered: 50 }, config: [] }] },
  });
  assert.is(h.pending(), 0);
  h.reporter.stop();
});

test('an unchanged state is not sent again, unless the link comes back', async () => {
  const h = harness(100);
  h.reporter.changed();
  await h.advance(0);
  assert.is(h.sent.length, 1);
  h.reporter.changed();
  await h.advance(1000);
  assert.is(h.sent.length, 1, 'same state: no report');
  h.reporter.connected();
  await h.advance(1000);
  assert.is(h.sent.length, 2, 'reconnected: in full');
  h.reporter.stop();
});

test('a report the control plane did not acknowledge is sent again at the next change', async () => {
  const h = harness(100);
  h.nack(true);
  h.reporter.changed();
  await h.advance(0);
  assert.is(h.sent.length, 1);
  h.nack(false);
  h.reporter.changed();
  await h.advance(100);
  assert.is(h.sent.length, 2, 'the same state again, since the first was not acknowledged');
  h.reporter.changed();
  await h.advance(1000);
  assert.is(h.sent.length, 2);
  h.reporter.stop();
  h.set({ tenants: {} });
  h.reporter.changed();
  await h.advance(1000);
  assert.is(h.sent.length, 2, 'stopped: nothing more');
});

test('flush at a clean stop: the state as it is now goes up once, with no change announced', async () => {
  const h = harness();
  h.reporter.connected();
  await h.advance(0);
  assert.is(h.sent.length, 1);
  // The exporters became ready, but the process stops before that was announced.
  h.set({ tenants: { volga: [{ path: 'volga/webhooks/w', status: 'ready' }] } });
  await h.reporter.flush(2000);
  assert.is(h.sent.length, 2);
  assert.equal(h.sent[1], { tenants: { volga: [{ path: 'volga/webhooks/w', status: 'ready' }] } });
  // Nothing new: a second flush sends nothing.
  await h.reporter.flush(2000);
  assert.is(h.sent.length, 2);
  h.reporter.stop();
});

test.run();
