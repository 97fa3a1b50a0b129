/**
 * The fleet change log, one suite for every implementation (in memory, and Redis — one server
 * and Sentinel — with two connections standing for two control-plane processes): compare-and-set appends, entries
 * after a version, reset outside the history, trimming by age, snapshots, and the append
 * notification reaching the other process.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import {
  createEmbeddedFleetLog,
  openRedisFleetLog,
  type Appended,
  type FleetLog,
} from '../../src/fleet/control/change-log.js';
import type { FleetChange } from '../../src/fleet/common/protocol.js';
import { freshTarget } from '../helpers/backends.js';
import { eventually } from '../helpers/wait.js';
import { SITE_WAIT } from '../helpers/fleet.js';

type Pair = { a: FleetLog; b: FleetLog; close(): Promise<void> };

function logSuite(name: string, open: () => Promise<Pair>) {
  const t = suite<{ pair: Pair }>(`fleet log (${name})`);
  t.before.each(async (ctx) => {
    ctx.pair = await open();
  });
  t.after.each(async (ctx) => {
    await ctx.pair.close();
  });

  t('append is a compare-and-set on the head, never goes back in revision', async ({ pair }) => {
    const { a, b } = pair;
    const empty = await a.snapshot('s');
    assert.is(empty.version, '0-0');
    const v1 = await a.append('s', '0-0', 1, [{ op: 'put', key: 'k1', value: { n: 1 } }]);
    assert.ok(v1);
    assert.is(await b.append('s', '0-0', 2, [{ op: 'put', key: 'k2', value: { n: 2 } }]), undefined, 'lost the race');
    assert.is(await b.append('s', v1!, 0, [{ op: 'put', key: 'k2', value: { n: 2 } }]), undefined, 'older revision');
    const v2 = await b.append('s', v1!, 2, [
      { op: 'put', key: 'k2', value: { n: 2 } },
      { op: 'delete', key: 'k1' },
    ]);
    assert.ok(v2);
    const snap = await a.snapshot('s');
    assert.is(snap.version, v2);
    assert.is(snap.rev, 2);
    assert.equal([...snap.objects], [['k2', { n: 2 }]]);
    assert.equal(await a.sites(), ['s']);
  });

  t("heads: each named site's head as every process sees it, 0-0 for a site without a log", async ({ pair }) => {
    const { a, b } = pair;
    assert.equal([...(await a.heads([]))], []);
    const v1 = (await a.append('s1', '0-0', 1, [{ op: 'put', key: 'k', value: { n: 1 } }]))!;
    const v2 = (await b.append('s1', v1, 2, [{ op: 'put', key: 'k', value: { n: 2 } }]))!;
    const w1 = (await b.append('s2', '0-0', 2, [{ op: 'put', key: 'k', value: { n: 1 } }]))!;
    assert.equal(
      [...(await a.heads(['s1', 's2', 'none']))],
      [
        ['s1', v2],
        ['s2', w1],
        ['none', '0-0'],
      ],
    );
  });

  t('since: entries after a version, in order; reset outside the history', async ({ pair }) => {
    const { a } = pair;
    let head = '0-0';
    const versions: string[] = [];
    for (let i = 0; i < 5; i++) {
      head = (await a.append('s', head, i, [{ op: 'put', key: `k${i}`, value: { i } }]))!;
      versions.push(head);
    }
    const after1 = await a.since('s', versions[1]!, 100);
    assert.ok(after1 !== 'reset');
    assert.equal(
      after1.map((e) => e.version),
      versions.slice(2),
    );
    assert.equal(after1[0]!.changes, [{ op: 'put', key: 'k2', value: { i: 2 } }]);
    const limited = await a.since('s', versions[0]!, 2);
    assert.equal(limited !== 'reset' && limited.map((e) => e.version), versions.slice(1, 3));
    assert.equal(await a.since('s', head, 10), []);
    assert.is(await a.since('s', '1-0', 10), 'reset', 'older than the log');
    assert.is(await a.since('s', '99999999999999-0', 10), 'reset', 'newer than the head');
    assert.is(await a.since('s', 'garbage', 10), 'reset');
    assert.is(await a.since('s', '99999999999999999999-0', 10), 'reset', 'beyond a stream ID');
  });

  t('trim drops entries older than the cutoff and moves the floor', async ({ pair }) => {
    const { a } = pair;
    const v1 = (await a.append('s', '0-0', 1, [{ op: 'put', key: 'k', value: { n: 1 } }]))!;
    const v2 = (await a.append('s', v1, 2, [{ op: 'put', key: 'k', value: { n: 2 } }]))!;
    await new Promise((r) => setTimeout(r, 5));
    const cutoff = Date.now();
    await new Promise((r) => setTimeout(r, 5));
    const v3 = (await a.append('s', v2, 3, [{ op: 'put', key: 'k', value: { n: 3 } }]))!;
    await a.trim('s', cutoff);
    assert.is(await a.since('s', v1, 10), 'reset', 'trimmed away');
    const fromFloor = await a.since('s', v2, 10);
    assert.equal(fromFloor !== 'reset' && fromFloor.map((e) => e.version), [v3]);
    assert.equal([...(await a.snapshot('s')).objects], [['k', { n: 3 }]], 'the set is not trimmed');
  });

  t('an append notifies the other process, with the entry when it is under 64 KiB', async ({ pair }) => {
    const seen: Array<[string, Appended | undefined]> = [];
    // From Redis the changes come as the JSON text the log holds (sent to the sites as it is).
    const plain = (a: Appended): Appended =>
      'text' in a ? { prev: a.prev, version: a.version, changes: JSON.parse(a.text) as FleetChange[] } : a;
    pair.b.onAppend((site, appended) => seen.push([site, appended && plain(appended)]));
    // The Redis subscription connects asynchronously: append until it has heard one.
    let head = '0-0';
    await eventually(
      async () => {
        head = (await pair.a.append('site-x', head, 1, [{ op: 'put', key: 'k', value: { head } }])) ?? head;
        return seen.some(([s]) => s === 'site-x');
      },
      'append notification',
      SITE_WAIT,
    );
    const small: FleetChange[] = [
      { op: 'put', key: 'k/é', value: { s: 'a "quoted" / text' } },
      { op: 'delete', key: 'k' },
    ];
    const prev = head;
    const v = (await pair.a.append('site-x', head, 2, small))!;
    await eventually(async () => seen.some(([, a]) => a?.version === v), 'the small entry', SITE_WAIT);
    assert.equal(
      seen.find(([, a]) => a?.version === v),
      ['site-x', { prev, version: v, changes: small }],
    );
    const large: FleetChange[] = [{ op: 'put', key: 'big', value: { pad: 'x'.repeat(70_000) } }];
    const v2 = (await pair.a.append('site-x', v, 3, large))!;
    const v3 = (await pair.a.append('site-x', v2, 4, small))!;
    await eventually(async () => seen.some(([, a]) => a?.version === v3), 'the entry after the large one', SITE_WAIT);
    const bigNote = seen.find(([, a]) => a?.version === v2);
    if (bigNote) assert.equal(bigNote[1], { prev: v, version: v2, changes: large }, 'in memory, every entry travels');
    else assert.is(seen.filter(([s, a]) => s === 'site-x' && a === undefined).length, 1, 'on Redis, without its entry');
  });

  t.run();
}

logSuite('memory', async () => {
  const log = createEmbeddedFleetLog();
  return { a: log, b: log, close: () => log.close() };
});

for (const deployment of ['redis', 'sentinel', 'cluster'] as const)
  logSuite(deployment, async () => {
    const target = await freshTarget(deployment, 5);
    const a = await openRedisFleetLog(target);
    const b = await openRedisFleetLog(target);
    return {
      a,
      b,
      close: async () => {
        await a.close();
        await b.close();
      },
    };
  });
