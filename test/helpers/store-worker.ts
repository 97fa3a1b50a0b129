/**
 * Child process of test/store/multiprocess.test.ts: `node --import tsx store-worker.ts <redisUrl> <id> <rounds>`.
 * Does `rounds` optimistic read-modify-write increments of `mp/counter` (retrying on a failed
 * expectation) and `rounds` three-object commits that write the same generation to mp/t/1..3.
 * Prints one JSON line {retries} on success.
 */
import { openRedisStore } from '../../src/store/redis.js';

const [url, id, roundsText] = process.argv.slice(2);
if (!url || !id || !roundsText) throw new Error('usage: store-worker.ts <redisUrl> <id> <rounds>');
const rounds = Number(roundsText);
const store = await openRedisStore(url);
let retries = 0;

for (let i = 0; i < rounds; i++) {
  for (;;) {
    const cur = await store.get('mp/counter');
    const n = typeof cur?.value.n === 'number' ? cur.value.n : 0;
    const r = await store.commit([
      { op: 'put', key: 'mp/counter', value: { n: n + 1 }, expect: cur ? cur.etag : null },
    ]);
    if (r.ok) break;
    retries++;
  }
  const gen = `${id}-${i}`;
  const r = await store.commit([1, 2, 3].map((j) => ({ op: 'put' as const, key: `mp/t/${j}`, value: { gen } })));
  if (!r.ok) throw new Error(`unconditional commit failed: ${JSON.stringify(r)}`);
}
process.stdout.write(JSON.stringify({ retries }) + '\n');
await store.close();
