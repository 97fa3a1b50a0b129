/**
 * The projector on real Redis, two of them (two control-plane processes' worth: separate store
 * and log connections) projecting the same configuration while it changes: the log they write
 * together replays, entry by entry from empty, to exactly each site's current set, which is
 * exactly what applies to it; a deleted site's set empties.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { applicableTo } from '../../src/fleet/applicable.js';
import { createClient } from 'redis';
import { openRedisFleetLog, type FleetChange } from '../../src/fleet/log.js';
import { startProjector } from '../../src/fleet/projector.js';
import type { JsonObject } from '../../src/lib/json.js';
import { openRedisStore } from '../../src/store/redis.js';
import type { Store } from '../../src/store/store.js';
import { freshRedisDb } from '../helpers/redis.js';
import { eventually } from '../helpers/wait.js';
import { SITE_WAIT } from '../helpers/fleet.js';

/** Every entry of a site's stream (ep:fleet:<site>:log, read with a plain client), applied in order to an empty set. */
async function replay(url: string, site: string): Promise<Map<string, JsonObject>> {
  const c = createClient({ url });
  await c.connect();
  const rows = await c.xRange(`ep:fleet:${site}:log`, '-', '+');
  await c.quit();
  const set = new Map<string, JsonObject>();
  for (const row of rows)
    for (const ch of JSON.parse(String(row.message.c)) as FleetChange[]) {
      if (ch.op === 'put') set.set(ch.key, ch.value);
      else set.delete(ch.key);
    }
  return set;
}

async function put(store: Store, key: string, value: JsonObject): Promise<void> {
  const r = await store.commit([{ op: 'put', key, value }]);
  assert.ok(r.ok, key);
}

test('two projectors on one Redis: the log replays to exactly what applies, for every site', async () => {
  const url = await freshRedisDb(9);
  const stores = [await openRedisStore(url), await openRedisStore(url)];
  const logs = [await openRedisFleetLog(url), await openRedisFleetLog(url)];
  const projectors = [0, 1].map((i) =>
    startProjector({ store: stores[i]!, fleetLog: logs[i]!, root: 'default', ownSite: 'hq', historyMs: 86_400_000 }),
  );
  try {
    const [a, b] = stores as [Store, Store];
    for (const s of ['s1', 's2', 's3'])
      await put(a, `default/sites/${s}`, { name: s, labels: { n: s === 's1' ? 'odd' : s === 's2' ? 'even' : 'odd' } });
    for (let i = 0; i < 30; i++) {
      const store = i % 2 ? a : b;
      const placement: JsonObject =
        i % 3 === 0 ? { 'match-site-labels': 'n = odd' } : i % 3 === 1 ? { sites: ['s2'] } : { 'all-sites': true };
      await put(store, `default/volga/webhooks/w${i % 7}`, {
        name: `w${i % 7}`,
        url: 'http://x/',
        topics: ['t'],
        'site-placement': placement,
        tries: i,
      });
      if (i === 20) await put(b, 'default/sites/s3', { name: 's3', labels: { n: 'even' } });
    }
    const r = await a.commit([{ op: 'delete', key: 'default/sites/s1' }]);
    assert.ok(r.ok);
    for (const p of projectors) await p.project();
    const view = new Map((await a.list('')).map((e) => [e.key, e.value]));
    for (const site of ['s1', 's2', 's3']) {
      const expected = site === 's1' ? new Map() : applicableTo(view, site, 'default');
      await eventually(
        async () => {
          const snap = await logs[0]!.snapshot(site);
          return JSON.stringify([...snap.objects].sort()) === JSON.stringify([...expected].sort());
        },
        `${site}'s set is what applies to it`,
        SITE_WAIT,
      );
      const replayed = await replay(url, site);
      assert.equal([...replayed].sort(), [...expected].sort(), `${site}: the history replays to the set`);
    }
    assert.equal((await logs[0]!.snapshot('s1')).objects.size, 0, 'a deleted site receives nothing');
    assert.not.ok((await logs[0]!.sites()).includes('hq'), "the control plane's own site has no log");
  } finally {
    for (const p of projectors) await p.stop();
    for (const l of logs) await l.close();
    for (const s of stores) await s.close();
  }
});

test.run();
