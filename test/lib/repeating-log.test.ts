/** repeatingLog: the first line of a repeating condition, then at most one every interval, with the count of those not logged. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { repeatingLog } from '../../src/lib/log.js';

/** The JSON lines `fn` writes to stdout. */
function linesOf(fn: () => void): Array<Record<string, unknown>> {
  const out: string[] = [];
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((chunk: string) => (out.push(String(chunk)), true)) as typeof process.stdout.write;
  try {
    fn();
  } finally {
    process.stdout.write = write;
  }
  return out.flatMap((t) => t.split('\n').filter((l) => l !== '')).map((l) => JSON.parse(l) as Record<string, unknown>);
}

test('logged at once, then once an interval with how many were not', () => {
  let now = 1_000;
  const say = repeatingLog(30_000, () => now);
  const lines = linesOf(() => {
    say('warn', 'redis connection error', { role: 'store' });
    for (let i = 0; i < 50; i++) {
      now += 500; // a reconnect attempt every 500 ms: 25 s
      say('warn', 'redis connection error', { role: 'store' });
    }
    now += 5_000; // 30 s after the first line
    say('warn', 'redis connection error', { role: 'store' });
  });
  assert.is(lines.length, 2);
  assert.equal(
    [lines[0]?.msg, lines[0]?.role, lines[0]?.['not-logged']],
    ['redis connection error', 'store', undefined],
  );
  assert.equal([lines[1]?.level, lines[1]?.['not-logged']], ['warn', 50]);
});

test('after ended(), the next occurrence is a new condition: logged at once', () => {
  let now = 1_000;
  const say = repeatingLog(30_000, () => now);
  const lines = linesOf(() => {
    say('warn', 'redis connection error', { role: 'store' });
    now += 1_000;
    say('warn', 'redis connection error', { role: 'store' }); // not logged: the same outage
    now += 1_000;
    say.ended(); // connected again
    now += 5_000; // a new outage 7 s after the first line
    say('warn', 'redis connection error', { role: 'store' });
    now += 1_000;
    say('warn', 'redis connection error', { role: 'store' }); // not logged: the new outage goes on
  });
  assert.is(lines.length, 2);
  // The call dropped in the first outage is no part of the second's line.
  assert.equal(
    lines.map((l) => l['not-logged']),
    [undefined, undefined],
  );
});

test.run();
