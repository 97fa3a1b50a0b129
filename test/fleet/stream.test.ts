/**
 * The sync stream (fleet/control/routes.ts) in process, on both change logs: entries travel with their
 * append notifications, and the stream falls back to reading the log when one comes without
 * its entry (over 64 KiB on Redis) or when more pile up than it keeps; either way the site
 * receives every version after the one it resumed from, in order, each once.
 */
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { AppDeps } from '../../src/api/deps.js';
import { createEmbeddedFleetLog, openRedisFleetLog, type FleetLog } from '../../src/fleet/control/change-log.js';
import type { FleetChange } from '../../src/fleet/common/protocol.js';
import { createPresence } from '../../src/fleet/control/presence.js';
import { createEmbeddedRelay } from '../../src/fleet/control/relay.js';
import { fleetSiteRoutes } from '../../src/fleet/control/routes.js';
import { recordedKeyOf } from '../../src/fleet/control/sealing.js';
import { issueSiteToken } from '../../src/fleet/control/site-tokens.js';
import { generateSiteKey } from '../../src/secrets/sealed.js';
import { openEmbeddedStore } from '../../src/store/embedded.js';
import { configKey } from '../../src/store/keys.js';
import type { Store } from '../../src/store/store.js';
import { tempDir } from '../helpers/backends.js';
import { freshRedisDb } from '../helpers/redis.js';

/** The key the site presents; recorded before a resume, else the stream starts with a snapshot. */
const siteKey = generateSiteKey().publicKey;

type Ctx = { log: FleetLog; store: Store; token: string; events: EventSourceMessage[]; stop: () => Promise<void> };

/** Opens the sync stream of site `s` (resuming from `after`) and collects its events. */
async function open(ctx: Ctx, after?: string, keepAliveMs = 60_000): Promise<void> {
  const app = fleetSiteRoutes({ store: ctx.store, settings: { tenant: 'default' } } as unknown as AppDeps, {
    fleetLog: ctx.log,
    presence: createPresence(ctx.store, ctx.log),
    relay: createEmbeddedRelay(),
    keepAliveMs,
  });
  const abort = new AbortController();
  const headers: Record<string, string> = {
    authorization: `Bearer ${ctx.token}`,
    'x-edgeplane-site-key': siteKey,
  };
  if (after) headers['last-event-id'] = after;
  const res = await app.request('/v1/fleet/sites/s/sync', { headers, signal: abort.signal });
  assert.is(res.status, 200);
  const parser = createParser({ onEvent: (e) => ctx.events.push(e) });
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  const pump = (async () => {
    for (;;) {
      const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
      if (done) return;
      parser.feed(decoder.decode(value, { stream: true }));
    }
  })();
  ctx.stop = async () => {
    abort.abort();
    await reader.cancel().catch(() => undefined);
    await pump;
  };
}

/** Waits (bounded) until an event with id `version` has arrived. */
async function until(ctx: Ctx, version: string): Promise<void> {
  for (let i = 0; i < 400 && !ctx.events.some((e) => e.id === version); i++)
    await new Promise((r) => setTimeout(r, 25));
  assert.ok(
    ctx.events.some((e) => e.id === version),
    `${version} arrived (last: ${ctx.events.at(-1)?.id})`,
  );
}

/**
 * Has the stream hear the log through a subscription that drops what comes while lost (as
 * pub/sub does while its connection is down); `real` appends.
 */
function lossy(ctx: Ctx): { real: FleetLog; lose: (on: boolean) => void } {
  let lost = false;
  const real = ctx.log;
  ctx.log = {
    ...real,
    onAppend: (listener) => real.onAppend((site, appended) => (lost ? undefined : listener(site, appended))),
  };
  return { real, lose: (on) => void (lost = on) };
}

const put = (n: number, bytes = 10): FleetChange[] => [
  { op: 'put', key: `k${n % 7}`, value: { n, pad: 'x'.repeat(bytes) } },
];

function streamSuite(name: string, openLog: () => Promise<FleetLog>) {
  const test = suite<Ctx>(`sync stream (${name} log)`);
  test.before.each(async (ctx) => {
    ctx.log = await openLog();
    ctx.store = await openEmbeddedStore(tempDir('edgeplane-stream-'));
    // The site object: a site whose object is gone is refused (its token revoked).
    await ctx.store.commit([{ op: 'put', key: configKey('default', 'sites/s'), value: { name: 's' } }]);
    ctx.token = await issueSiteToken(ctx.store, 's');
    ctx.events = [];
    ctx.stop = async () => undefined;
  });
  test.after.each(async (ctx) => {
    await ctx.stop();
    await ctx.log.close();
    await ctx.store.close();
  });

  test('a burst of appends, small and large: every version after the snapshot once, in order', async (ctx) => {
    let head = await ctx.log.append('s', '0-0', 1, put(0));
    assert.ok(head);
    await open(ctx);
    await until(ctx, head);
    const versions: string[] = [];
    for (let i = 1; i <= 260; i++) {
      // Every 50th entry is over the 64 KiB a notification carries.
      head = await ctx.log.append('s', head!, 1 + i, put(i, i % 50 === 0 ? 70_000 : 10));
      assert.ok(head);
      versions.push(head);
      if (i % 90 === 0) await new Promise((r) => setTimeout(r, 20)); // let some go out before the next
    }
    await until(ctx, head!);
    const changes = ctx.events.filter((e) => e.event === 'change');
    assert.equal(
      changes.map((e) => e.id),
      versions,
    );
    const last = JSON.parse(changes.at(-1)!.data) as { changes: FleetChange[] };
    assert.equal(last.changes, put(260));
  });

  test('resuming from a version sends what follows it, then what is appended', async (ctx) => {
    const versions: string[] = [];
    let head = '0-0';
    for (let i = 0; i < 5; i++) versions.push((head = (await ctx.log.append('s', head, i, put(i)))!));
    await ctx.store.kvSet(recordedKeyOf('s'), siteKey);
    await open(ctx, versions[1]);
    await until(ctx, versions[4]!);
    head = (await ctx.log.append('s', head, 9, put(9)))!;
    versions.push(head);
    await until(ctx, head);
    assert.equal(
      ctx.events.map((e) => e.event),
      ['change', 'change', 'change', 'change'],
    );
    assert.equal(
      ctx.events.map((e) => e.id),
      versions.slice(2),
    );
  });

  test('notifications lost (pub/sub while its connection is down): the next one shows the gap, the log fills it', async (ctx) => {
    const { real, lose } = lossy(ctx);
    let head = (await real.append('s', '0-0', 1, put(0)))!;
    await open(ctx);
    await until(ctx, head);
    const versions: string[] = [];
    lose(true);
    for (let i = 1; i <= 3; i++) versions.push((head = (await real.append('s', head, 1 + i, put(i)))!));
    await new Promise((r) => setTimeout(r, 300));
    lose(false);
    assert.ok(!ctx.events.some((e) => e.id === versions[0]), 'the three were not heard');
    versions.push((head = (await real.append('s', head, 9, put(9)))!));
    await until(ctx, head);
    assert.equal(
      ctx.events.filter((e) => e.event === 'change').map((e) => e.id),
      versions,
    );
  });

  test('a notification lost and nothing appended after: the read after a quiet spell sends it, then a bookmark', async (ctx) => {
    const { real, lose } = lossy(ctx);
    let head = (await real.append('s', '0-0', 1, put(0)))!;
    await open(ctx, undefined, 300);
    await until(ctx, head);
    lose(true);
    head = (await real.append('s', head, 2, put(1)))!;
    lose(false);
    await until(ctx, head);
    for (let i = 0; i < 40 && !ctx.events.some((e) => e.event === 'bookmark'); i++)
      await new Promise((r) => setTimeout(r, 50));
    assert.equal(
      ctx.events.slice(0, 4).map((e) => [e.event, e.id ?? '']),
      [
        ['reset', ''],
        ['snapshot', ctx.events[1]!.id!],
        ['change', head],
        ['bookmark', head],
      ],
    );
    assert.is(ctx.events.at(-1)?.event, 'bookmark');
  });

  test("presence: a control plane's stop disconnects the streams it holds at once, and a late refresh does not connect them again", async (ctx) => {
    const presence = createPresence(ctx.store, ctx.log);
    await presence.connected('s', 'stream-1', 60_000);
    assert.ok(await presence.isConnected('s'));
    await presence.releaseAll();
    assert.not.ok(await presence.isConnected('s'), 'not connected for the presence TTL (60 s) more');
    await presence.connected('s', 'stream-1', 60_000); // the stream's keep-alive refresh, before its socket closes
    assert.not.ok(await presence.isConnected('s'));
  });

  test.run();
}

streamSuite('memory', async () => createEmbeddedFleetLog());
streamSuite('redis', async () => openRedisFleetLog(await freshRedisDb(13)));
