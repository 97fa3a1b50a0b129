/**
 * Several processes writing through the Redis store at once: optimistic concurrency loses no
 * update, and a multi-object commit is never seen half applied. Database 6 of the runner's redis-server.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openRedisStore } from '../../src/store/redis.js';
import { freshRedisDb } from '../helpers/redis.js';

const worker = fileURLToPath(new URL('../helpers/store-worker.ts', import.meta.url));

function runWorker(url: string, id: string, rounds: number): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', worker, url, id, String(rounds)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.on('close', (code) => resolve({ code, out }));
  });
}

test('3 processes × 50 optimistic increments = 150; 3-object commits never partial', async () => {
  const url = await freshRedisDb(6);
  const store = await openRedisStore(url);
  let running = true;
  let snapshots = 0;
  const partial: string[] = [];
  // Reads while the children write: list() fetches the three objects in one MULTI.
  const watcher = (async () => {
    while (running) {
      const gens = (await store.list('mp/t')).map((e) => e.value.gen);
      if (gens.length > 0) {
        snapshots++;
        if (gens.length !== 3 || new Set(gens).size !== 1) partial.push(JSON.stringify(gens));
      }
      await new Promise((r) => setImmediate(r));
    }
  })();

  const results = await Promise.all(['a', 'b', 'c'].map((id) => runWorker(url, id, 50)));
  running = false;
  await watcher;
  for (const r of results) assert.is(r.code, 0, r.out);

  const counter = await store.get('mp/counter');
  assert.equal(counter?.value, { n: 150 });
  assert.equal(partial, [], 'no partial multi-object state observed');
  assert.ok(snapshots > 0);
  const gens = (await store.list('mp/t')).map((e) => e.value.gen);
  assert.is(new Set(gens).size, 1);
  // 150 counter commits + 150 triple commits, each +1 (the failed ones bump nothing).
  assert.is(await store.revision(), 300);
  await store.close();
});

test.run();
