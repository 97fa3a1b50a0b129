/**
 * The edge site's reconnection back-off: exponential with jitter (half to all of
 * min(max, base × 2^attempt)), reset once a stream delivered events. Randomness and the wait
 * are injected, so nothing here sleeps: the site loop runs against a local HTTP server that
 * refuses (503) or serves one event, and the test records each wait the loop chose.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ManagedKeys } from '../../src/fleet/site/managed.js';
import { generateSiteKey } from '../../src/secrets/sealed.js';
import { startSiteSync, storeTarget } from '../../src/fleet/site/sync-loop.js';
import { backoffDelay } from '../../src/lib/backoff.js';
import { openEmbeddedStore } from '../../src/store/embedded.js';
import { tempDir } from '../helpers/backends.js';
import { setLogLevel } from '../../src/lib/log.js';

setLogLevel('error');

/** The site loop's back-off with base 100 ms and max 1 s. */
const reconnectDelay = (attempt: number, random: () => number) =>
  backoffDelay(attempt, { baseMs: 100, maxMs: 1000, jitter: 'equal' }, random);

test("the site's reconnection back-off (lib/backoff.ts, equal jitter): half to all of the capped exponential ceiling, by the random draw", () => {
  assert.is(
    reconnectDelay(0, () => 0),
    50,
  );
  assert.is(
    reconnectDelay(0, () => 0.5),
    75,
  );
  assert.is(
    reconnectDelay(3, () => 0),
    400,
  );
  assert.is(
    reconnectDelay(3, () => 1),
    800,
  );
  assert.is(
    reconnectDelay(4, () => 0),
    500,
    'capped at max',
  );
  assert.is(
    reconnectDelay(50, () => 1),
    1000,
    'a huge attempt count stays capped',
  );
});

test('jitter: sites that lose the control plane together spread their reconnections', () => {
  let seed = 7;
  const lcg = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const delays = Array.from({ length: 1000 }, () =>
    backoffDelay(2, { baseMs: 500, maxMs: 30_000, jitter: 'equal' }, lcg),
  );
  for (const d of delays) assert.ok(d >= 1000 && d <= 2000, `within [ceiling/2, ceiling]: ${d}`);
  const buckets = new Set(delays.map((d) => Math.floor(d / 100)));
  assert.is(buckets.size, 10, 'spread over the whole jitter window, not one instant');
});

for (const [how, end] of [
  ['closed', (res: import('node:http').ServerResponse) => res.end()],
  // A control-plane restart: the stream breaks after its events (the loop sees an error, not an end).
  ['broken', (res: import('node:http').ServerResponse) => setTimeout(() => res.socket?.destroy(), 50)],
] as const)
  test(`the site loop waits by that back-off between failures and starts over after a stream with events (${how})`, async () => {
    let connections = 0;
    const server = createServer((req, res) => {
      connections++;
      if (connections === 4) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('event: change\nid: 5-0\ndata: {"changes": []}\n\n');
        end(res);
        return;
      }
      if (req.url?.endsWith('/ack')) return void res.writeHead(204).end();
      res.writeHead(503).end('not now');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const dir = tempDir('edgeplane-backoff-');
    const store = await openEmbeddedStore(dir);
    const waits: number[] = [];
    let enough: () => void = () => undefined;
    const done = new Promise<void>((r) => (enough = r));
    const sync = startSiteSync({
      url,
      site: 'edge-x',
      token: 't',
      target: storeTarget(store, new ManagedKeys()),
      publicKey: () => Promise.resolve(generateSiteKey().publicKey),
      random: () => 0.5,
      baseBackoffMs: 100,
      maxBackoffMs: 1000,
      sleep: async (ms) => {
        waits.push(ms);
        if (waits.length >= 9) enough();
      },
    });
    const timeout = setTimeout(() => enough(), 10_000);
    await done;
    clearTimeout(timeout);
    await sync.stop();
    await store.close();
    await new Promise<void>((r) => server.close(() => r()));
    // Three refusals (attempts 0, 1, 2), a stream that applied 5-0 (back to attempt 0), then
    // refusals again up to the cap: 75 % of min(1000, 100 × 2^attempt) with the draw 0.5.
    assert.equal(waits.slice(0, 9), [75, 150, 300, 75, 150, 300, 600, 750, 750]);
  });

test.run();
