/**
 * The projector seals vault secrets for each site's public key (src/fleet/control/sealing.ts), on real
 * Redis: a site without a key receives no secret; with one, each member is sealed so that only
 * that key opens it; a pass over an unchanged configuration (even by a fresh projector that
 * knows nothing) writes nothing; a changed secret or a new site key seals again; while the
 * control plane's secret store is sealed, nothing is sealed and nothing is lost.
 */
import { randomBytes } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openRedisFleetLog, type FleetLog } from '../../src/fleet/control/change-log.js';
import { startProjector } from '../../src/fleet/control/projector.js';
import { recordedKeyOf } from '../../src/fleet/control/sealing.js';
import type { JsonObject } from '../../src/lib/json.js';
import { encryptSecret } from '../../src/secrets/secrets.js';
import { generateSiteKey, loadSitePrivateKey, open } from '../../src/secrets/sealed.js';
import { sealedContext, Strongbox } from '../../src/secrets/strongbox.js';
import { openRedisStore } from '../../src/store/redis.js';
import type { Store } from '../../src/store/store.js';
import { freshRedisDb } from '../helpers/redis.js';

const secretKey = 'default/strongbox/vaults/v/secrets/s';
const masterKey = randomBytes(32).toString('base64');

let store: Store;
let fleetLog: FleetLog;
let box: Strongbox;

test.before(async () => {
  const url = await freshRedisDb(11);
  store = await openRedisStore(url);
  fleetLog = await openRedisFleetLog(url);
  box = new Strongbox(store);
  await box.unseal(masterKey, 'test', { initialise: true });
  const put = (key: string, value: JsonObject) => ({ op: 'put' as const, key, value });
  const r = await store.commit([
    put('default/sites/e1', { name: 'e1' }),
    put('default/strongbox/vaults/v', { name: 'v' }),
    put(secretKey, encryptSecret(box, secretKey, { name: 's', data: { token: 'tok-1', user: 'bob' } })),
    put('default/volga/webhooks/w', {
      name: 'w',
      url: 'http://x/',
      topics: ['t'],
      'site-placement': { sites: ['e1'] },
      variables: [{ name: 'T', 'value-from-vault-secret': { vault: 'v', secret: 's', key: 'token' } }],
    }),
  ]);
  assert.ok(r.ok);
});

test.after(async () => {
  await fleetLog.close();
  await store.close();
});

/** One projection pass by a fresh projector (it knows nothing but what the log holds). */
async function project(strongbox: Strongbox = box): Promise<void> {
  const p = startProjector({ store, fleetLog, root: 'default', ownSite: 'hq', historyMs: 86_400_000, strongbox });
  await p.project();
  await p.stop();
}

const sealedSecret = async () => (await fleetLog.snapshot('e1')).objects.get(secretKey);
const head = async () => (await fleetLog.snapshot('e1')).version;

test('a site that presented no key receives everything but the secret', async () => {
  await project();
  const snap = await fleetLog.snapshot('e1');
  assert.ok(snap.objects.has('default/volga/webhooks/w'));
  assert.ok(snap.objects.has('default/strongbox/vaults/v'));
  assert.not.ok(snap.objects.has(secretKey));
});

test("with the site's key: each member sealed for it; an unchanged configuration writes nothing", async () => {
  const site = generateSiteKey();
  const key = loadSitePrivateKey(site.privateDer);
  await store.kvSet(recordedKeyOf('e1'), site.publicKey);
  await project();
  const sealed = await sealedSecret();
  const data = sealed?.data as Record<string, string>;
  assert.match(data.token!, /^sealed:v1:/);
  assert.is(open(key, data.token!, sealedContext('e1', secretKey, 'token')), 'tok-1');
  assert.is(open(key, data.user!, sealedContext('e1', secretKey, 'user')), 'bob');
  const before = await head();
  await project();
  await project();
  assert.is(await head(), before, 'no new entry: the fingerprints match');

  // The secret changes: sealed again, and only it.
  const r = await store.commit([
    { op: 'put', key: secretKey, value: encryptSecret(box, secretKey, { name: 's', data: { token: 'tok-2' } }) },
  ]);
  assert.ok(r.ok);
  await project();
  const entries = await fleetLog.since('e1', before, 10);
  assert.ok(Array.isArray(entries) && entries.length === 1);
  assert.equal(
    entries[0]!.changes.map((c) => c.key),
    [secretKey],
  );
  const now = (await sealedSecret())?.data as Record<string, string>;
  assert.is(open(key, now.token!, sealedContext('e1', secretKey, 'token')), 'tok-2');
});

test("a new site key while the control plane's secret store is sealed: nothing sealed, nothing lost; unsealed, sealed again", async () => {
  const old = (await sealedSecret())?.data as Record<string, string>;
  const site = generateSiteKey();
  await store.kvSet(recordedKeyOf('e1'), site.publicKey);
  const before = await head();
  await project(new Strongbox(store)); // a process that has not unsealed
  assert.is(await head(), before);
  assert.equal((await sealedSecret())?.data, old, 'the secret stays as it was');
  await project();
  const data = (await sealedSecret())?.data as Record<string, string>;
  assert.is(open(loadSitePrivateKey(site.privateDer), data.token!, sealedContext('e1', secretKey, 'token')), 'tok-2');
});

test.run();
