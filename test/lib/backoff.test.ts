/** lib/backoff.ts: the one back-off formula (ceiling min(max, base × 2^attempt)) and its jitters. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { backoffDelay } from '../../src/lib/backoff.js';

const at = (draw: number) => () => draw;

test('no jitter: the ceiling doubles from the base and stops at the maximum', () => {
  const b = { baseMs: 100, maxMs: 5000 };
  assert.equal(
    [0, 1, 2, 5, 6, 7, 1000].map((n) => backoffDelay(n, b)),
    [100, 200, 400, 3200, 5000, 5000, 5000],
  );
  assert.is(backoffDelay(-3, b), 100, 'a negative attempt counts as the first');
});

test('full jitter: anywhere from 0 to the ceiling', () => {
  const b = { baseMs: 1, maxMs: 50, jitter: 'full' } as const;
  assert.is(backoffDelay(3, b, at(0)), 0);
  assert.is(backoffDelay(3, b, at(0.5)), 4);
  assert.is(backoffDelay(10, b, at(0.5)), 25, 'half of the capped ceiling');
});

test('equal jitter: from half the ceiling to all of it', () => {
  const b = { baseMs: 100, maxMs: 1000, jitter: 'equal' } as const;
  assert.is(backoffDelay(3, b, at(0)), 400);
  assert.is(backoffDelay(3, b, at(1)), 800);
  assert.is(backoffDelay(9, b, at(0)), 500);
});

test('a spread p: the ceiling ± p, never above the maximum', () => {
  const b = { baseMs: 100, maxMs: 1000, jitter: 0.2 };
  const ms = (n: number, draw: number) => Math.round(backoffDelay(n, b, at(draw)) * 1e6) / 1e6;
  assert.equal([ms(0, 0), ms(0, 0.5), ms(0, 1), ms(9, 0), ms(9, 1)], [80, 100, 120, 800, 1000]);
});

test.run();
