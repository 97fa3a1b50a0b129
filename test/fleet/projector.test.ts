/**
 * The projector on real Redis, two of them (two control-plane processes' worth: separate store
 * and log connections) projecting the same configuration while it changes: the log they write
 * together replays, entry by entry from empty, to exactly each site's current set, which is
 * exactly what applies to it; a deleted site's set empties.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { applicableTo } from '../../src/fleet/control/applicable.js';
import { createClient } from 'redis';
import { openRedisFleetLog } from '../../src/fleet/control/change-log.js';
import type { FleetChange } from '../../src/fleet/common/protocol.js';
import { startProjector } from '../../src/fleet/control/projector.js';
import type { JsonObject } from '../../src/lib/json.js';
import { openRedisStore } from '../../src/store/redis.js';
import { etagOf } from '../../src/store/etag.js';
import type { Store } from '../../src/store/store.js';
import { freshRedisDb } from '../helpers/redis.js';
import { eventually, sleep } from '../helpers/wait.js';
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

/** A store, a fleet log and a projector on a fresh Redis database (one control-plane process). */
async function openProjector(db: number, opts: { resyncMs: number; historyMs?: number; now?: () => number }) {
  const url = await freshRedisDb(db);
  const store = await openRedisStore(url);
  const log = await openRedisFleetLog(url);
  const projector = startProjector({
    store,
    fleetLog: log,
    root: 'default',
    ownSite: 'hq',
    historyMs: opts.historyMs ?? 86_400_000,
    resyncMs: opts.resyncMs,
    ...(opts.now ? { now: opts.now } : {}),
  });
  const close = async () => {
    await projector.stop();
    await log.close();
    await store.close();
  };
  return { url, store, log, projector, close };
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

test('the periodic resync re-projects a site whose log another process changed, and only such a site', async () => {
  const { url, store, log, projector, close } = await openProjector(10, { resyncMs: 100 });
  const other = await openRedisFleetLog(url); // another control-plane process's connection
  const exporter = 'default/volga/webhooks/w';
  try {
    for (const s of ['s1', 's2']) await put(store, `default/sites/${s}`, { name: s });
    await put(store, exporter, {
      name: 'w',
      url: 'http://x/',
      topics: ['t'],
      'site-placement': { 'all-sites': true },
    });
    await projector.project();
    for (const s of ['s1', 's2'])
      await eventually(async () => (await log.snapshot(s)).objects.has(exporter), `${s} has the exporter`, SITE_WAIT);
    // The other process removes the exporter from s1's log; the configuration does not change.
    const snap = await other.snapshot('s1');
    assert.ok(await other.append('s1', snap.version, snap.rev, [{ op: 'delete', key: exporter }]));
    await eventually(
      async () => (await log.snapshot('s1')).objects.has(exporter),
      "s1's set is what applies to it again",
      SITE_WAIT,
    );
    const heads = await log.heads(['s1', 's2']);
    await sleep(500); // five resyncs
    assert.equal(await log.heads(['s1', 's2']), heads, 'a resync appends nothing when the logs are in step');
  } finally {
    await other.close();
    await close();
  }
});

test('a change no notification announced reaches the sites through the periodic resync (every ETag read, every site within eight)', async () => {
  const { url, store, log, projector, close } = await openProjector(13, { resyncMs: 100 });
  const raw = createClient({ url });
  await raw.connect();
  const exporter = 'default/volga/webhooks/quiet';
  try {
    for (let i = 0; i < 12; i++) await put(store, `default/sites/s${i}`, { name: `s${i}` });
    await projector.project();
    // Written behind the store's back: no commit script, so no notification and no ep:cfg-changed entry.
    const value = { name: 'quiet', url: 'http://x/', topics: ['t'], 'site-placement': { 'all-sites': true } };
    await raw.hSet(`ep:cfg:${exporter}`, { v: JSON.stringify(value), e: etagOf(value) });
    await raw.zAdd('ep:cfg-index', { score: 0, value: exporter });
    await raw.incr('ep:rev');
    for (let i = 0; i < 12; i++)
      await eventually(async () => (await log.snapshot(`s${i}`)).objects.has(exporter), `s${i} has it`, SITE_WAIT);
  } finally {
    await raw.quit();
    await close();
  }
});

test('passes after commits (no full pass) keep every site at exactly what applies; a label change appends to that site alone', async () => {
  // No resync within the test: every pass after the first is one a commit triggered.
  const { store, log, close } = await openProjector(11, { resyncMs: 3_600_000 });
  const sites = ['s1', 's2', 's3', 's4'];
  const hook = (name: string, placement: JsonObject, extra: JsonObject = {}): JsonObject => ({
    name,
    url: 'http://x/',
    topics: ['t'],
    'site-placement': placement,
    ...extra,
  });
  const inStep = async (what: string) => {
    const view = new Map((await store.list('')).map((e) => [e.key, e.value]));
    for (const site of sites) {
      const expected = view.has(`default/sites/${site}`) ? applicableTo(view, site, 'default') : new Map();
      await eventually(
        async () =>
          JSON.stringify([...(await log.snapshot(site)).objects].sort()) === JSON.stringify([...expected].sort()),
        `${what}: ${site}'s set is what applies to it`,
        SITE_WAIT,
      );
    }
  };
  try {
    for (const [i, s] of sites.entries())
      await put(store, `default/sites/${s}`, { name: s, labels: { group: i % 2 ? 'odd' : 'even' } });
    await put(store, 'default/volga/webhooks/even', hook('even', { 'match-site-labels': 'group = even' }));
    await put(store, 'default/volga/webhooks/s4', hook('s4', { sites: ['s4'] }));
    await put(store, 'default/application-deployments/d', {
      name: 'd',
      'application-name': 'a',
      'application-version': '1',
      placement: { 'match-site-labels': 'group = odd' },
    });
    await put(
      store,
      'default/volga/webhooks/by-d',
      hook(
        'by-d',
        { 'application-deployments': ['d'] },
        {
          variables: [{ name: 'K', 'value-from-vault-secret': { vault: 'v', secret: 's', key: 'k' } }],
        },
      ),
    );
    await inStep('created');

    // A label change: that site gains and loses exporters; no other site's log moves.
    const before = await log.heads(sites);
    await put(store, 'default/sites/s2', { name: 's2', labels: { group: 'even' } });
    await inStep('s2 moved to even');
    const after = await log.heads(sites);
    assert.is.not(after.get('s2'), before.get('s2'), "s2's log grew");
    for (const s of ['s1', 's3', 's4']) assert.is(after.get(s), before.get(s), `${s}'s log did not move`);

    // An exporter's placement moves it from some sites to others; a deleted one leaves.
    await put(store, 'default/volga/webhooks/even', hook('even', { 'match-site-labels': 'group = odd' }));
    await inStep('exporter moved to odd');
    await store.commit([{ op: 'delete', key: 'default/volga/webhooks/s4' }]);
    await inStep('exporter deleted');
    // The deployment (not a site or an exporter) changes what by-d brings everywhere.
    await put(store, 'default/application-deployments/d', {
      name: 'd',
      'application-name': 'a',
      'application-version': '2',
      placement: { 'match-site-labels': 'group = even' },
    });
    await inStep('deployment changed');
    await put(store, 'default/strongbox/vaults/v', { name: 'v' });
    await inStep('vault created');
    // A site deleted empties; a site created gets its set.
    await store.commit([{ op: 'delete', key: 'default/sites/s3' }]);
    await inStep('s3 deleted');
    await put(store, 'default/sites/s3', { name: 's3', labels: { group: 'even' } });
    await inStep('s3 back');
  } finally {
    await close();
  }
});

test('without a fleet, commits start no pass until one names a site; that site then gets everything that applies', async () => {
  const { url, store, log, close } = await openProjector(12, { resyncMs: 3_600_000 });
  try {
    // The process's own site and exporters, no other site: nothing to project.
    await put(store, 'default/sites/hq', { name: 'hq' });
    for (let i = 0; i < 3; i++)
      await put(store, `default/volga/webhooks/w${i}`, {
        name: `w${i}`,
        url: 'http://x/',
        topics: ['t'],
        'site-placement': { 'all-sites': true },
      });
    await sleep(200);
    assert.equal(await log.sites(), []);
    // The first other site: it receives the exporters committed before it.
    await put(store, 'default/sites/s1', { name: 's1' });
    const view = new Map((await store.list('')).map((e) => [e.key, e.value]));
    const expected = [...applicableTo(view, 's1', 'default').keys()].sort();
    for (let i = 0; i < 3; i++) assert.ok(expected.includes(`default/volga/webhooks/w${i}`), `w${i} applies to s1`);
    await eventually(
      async () => JSON.stringify([...(await replay(url, 's1')).keys()].sort()) === JSON.stringify(expected),
      "s1's log replays to what applies to it",
      SITE_WAIT,
    );
    assert.equal(await log.sites(), ['s1']);
  } finally {
    await close();
  }
});

test('the history is trimmed beside the passes, once a minute: an old version then needs a snapshot', async () => {
  let clock = Date.now();
  const { store, log, projector, close } = await openProjector(12, {
    resyncMs: 3_600_000,
    historyMs: 1000,
    now: () => clock,
  });
  try {
    await put(store, 'default/sites/s1', { name: 's1', labels: { n: '1' } });
    await projector.project();
    const first = (await log.snapshot('s1')).version;
    await put(store, 'default/sites/s1', { name: 's1', labels: { n: '2' } });
    await eventually(async () => (await log.snapshot('s1')).version !== first, 'the second entry', SITE_WAIT);
    assert.ok(Array.isArray(await log.since('s1', first, 10)), 'still within the history');
    await sleep(1100); // the log's versions are Redis times: both entries are now older than 1 s
    clock = Date.now() + 61_000;
    await put(store, 'default/sites/s1', { name: 's1', labels: { n: '3' } });
    await eventually(async () => (await log.since('s1', first, 10)) === 'reset', 'trimmed away', SITE_WAIT);
    const snap = await log.snapshot('s1');
    assert.equal(snap.objects.get('default/sites/s1'), { name: 's1', labels: { n: '3' } }, 'the set is whole');
  } finally {
    await close();
  }
});

test('a pass that folds several commits appends first at the sites of the oldest', async () => {
  const url = await freshRedisDb(14);
  const store = await openRedisStore(url);
  const inner = await openRedisFleetLog(url);
  // The log as the projector sees it: each append recorded in call order; once armed, one at
  // site `gate` held until released, so the commits made meanwhile are folded into the next pass.
  const order: string[] = [];
  let armed = false;
  let release = () => {};
  const gate = new Promise<void>((r) => (release = r));
  const log: typeof inner = {
    ...inner,
    async append(site, head, rev, changes) {
      order.push(site);
      if (site === 'gate' && armed) await gate;
      return inner.append(site, head, rev, changes);
    },
  };
  // No periodic resync within the test: every pass is one a commit asked for.
  const projector = startProjector({
    store,
    fleetLog: log,
    root: 'default',
    ownSite: 'hq',
    historyMs: 86_400_000,
    resyncMs: 3_600_000,
  });
  const hook = (name: string, sites: string[]): JsonObject => ({
    name,
    url: 'http://x/',
    topics: ['t'],
    'site-placement': { sites },
  });
  const early = ['s4', 's5', 's6'];
  const late = ['s1', 's2', 's3'];
  try {
    for (const s of ['gate', ...late, ...early]) await put(store, `default/sites/${s}`, { name: s });
    await projector.project();
    armed = true;
    await put(store, 'default/volga/webhooks/g', hook('g', ['gate']));
    await eventually(async () => order.at(-1) === 'gate', 'a pass waits at the gate', SITE_WAIT);
    // Committed while that pass waits: the older places an exporter at sites listed after the
    // newer's (the sites' own order would serve the newer first).
    await put(store, 'default/volga/webhooks/early', hook('early', early));
    await put(store, 'default/volga/webhooks/late', hook('late', late));
    const from = order.length;
    release();
    for (const s of [...early, ...late])
      await eventually(
        async () => (await inner.snapshot(s)).objects.size === 2,
        `${s} has its site object and its exporter`,
        SITE_WAIT,
      );
    const next = order.slice(from);
    assert.equal(next.slice(0, 6).sort(), [...early, ...late].sort(), 'one pass serves both commits');
    assert.equal(next.slice(0, 3).sort(), early, 'the sites of the older commit first');
  } finally {
    release();
    await projector.stop();
    await inner.close();
    await store.close();
  }
});

test.run();
