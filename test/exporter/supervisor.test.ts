/**
 * The supervisor against real Redis: placement (sites, labels, deployments) and its changes,
 * updates that keep offsets, deletion destroying the consumer group, topic-patterns
 * discovery, secrets (sealed → error, restart re-reads), restart of an unknown exporter.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createClient } from 'redis';
import { openEnv, staticSecrets, type Env } from '../helpers/exporter-proc.js';
import { startWebhookServer, type WebhookServer } from '../helpers/webhook-server.js';
import type { Runtime } from '../../src/exporter/runtime.js';
import { webhookStateKey } from '../../src/store/keys.js';
import type { JsonObject } from '../../src/lib/json.js';
import { freshRedisDb } from '../helpers/redis.js';
import { eventually, sleep } from '../helpers/wait.js';
import { AgentPool } from '../../src/exporter/send.js';
import { Supervisor } from '../../src/exporter/supervisor.js';
import { systemClock } from '../../src/lib/clock.js';
import type { Store } from '../../src/store/store.js';
import { openTestBus, openTestStore } from '../helpers/backends.js';

let env: Env;
let hook: WebhookServer;
let rt: Runtime;
let sealed = true;
const secretData: Record<string, Record<string, string>> = { 'default/v/s': { k: 'one' } };
type Redis = ReturnType<typeof createClient>;
let redis: Redis;

test.before(async () => {
  const url = await freshRedisDb(4);
  env = await openEnv(url);
  redis = createClient({ url });
  await redis.connect();
  hook = await startWebhookServer();
  await env.put('sites/edge1', { name: 'edge1', type: 'edge', labels: { env: 'prod' }, hosts: [] });
  rt = await env.start({ site: 'edge1', secrets: staticSecrets(secretData, () => sealed), secretRetryMs: 200 });
});
test.after(async () => {
  await env.close();
  await hook.close();
  await redis.close();
});

const base = (name: string, topic: string, placement: JsonObject): JsonObject => ({
  name,
  topics: [topic],
  'site-placement': placement,
  url: `${hook.url}/${name}`,
  data: '${MSG_PAYLOAD}',
});
const got = (name: string) =>
  hook
    .delivered()
    .filter((r) => r.path === `/${name}`)
    .map((r) => r.body);
const groups = async (topic: string): Promise<string[]> => {
  const raw = await redis.sendCommand(['XINFO', 'GROUPS', `volga:${topic}`]).catch(() => []);
  return Array.isArray(raw) ? raw.map((g) => (Array.isArray(g) ? String(g[1]) : '')) : [];
};

const placements: Array<[string, JsonObject, 'ready' | 'stopped']> = [
  ['all-sites', { 'all-sites': true }, 'ready'],
  ['sites listing this site', { sites: ['x', 'edge1'] }, 'ready'],
  ['sites not listing it', { sites: ['x'] }, 'stopped'],
  ['match-site-labels on site labels', { 'match-site-labels': 'env = prod and system/type = edge' }, 'ready'],
  ['match-site-labels on system/name', { 'match-site-labels': 'system/name in {edge1, edge2}' }, 'ready'],
  ['match-site-labels not matching', { 'match-site-labels': 'env = dev' }, 'stopped'],
];
placements.forEach(([label, placement, status], i) => {
  test(`placement: ${label} → ${status}`, async () => {
    await env.webhook(base(`pl-${i}`, `pl-topic-${i}`, placement));
    await env.state(rt, `pl-${i}`, (s) => s.status === status, status);
  });
});

test('placement follows site label and deployment changes', async () => {
  await env.webhook(base('dep', 'dep-topic', { 'application-deployments': ['d1'] }));
  await env.state(rt, 'dep', (s) => s.status === 'stopped', 'stopped without the deployment');
  await env.put('application-deployments/d1', {
    name: 'd1',
    'application-name': 'a',
    'application-version': '1',
    placement: { 'match-site-labels': 'gpu = yes' },
  });
  await env.state(rt, 'dep', (s) => s.status === 'stopped', 'still stopped: site has no gpu label');
  await env.put('sites/edge1', {
    name: 'edge1',
    type: 'edge',
    labels: { env: 'prod' },
    hosts: [{ 'host-id': 'h', labels: { gpu: 'yes' } }],
  });
  await env.state(rt, 'dep', (s) => s.status === 'ready', 'ready once a host carries gpu=yes');
  await env.produce('dep-topic', 'hello');
  await hook.waitFor(() => got('dep').length === 1, 'delivery');
  await env.put('sites/edge1', { name: 'edge1', type: 'edge', labels: { env: 'prod' }, hosts: [] });
  await env.state(rt, 'dep', (s) => s.status === 'stopped', 'stopped again');
});

test('an update restarts the exporter keeping its offset; nothing is skipped or repeated', async () => {
  await env.webhook(base('upd', 'upd-topic', { 'all-sites': true }));
  await env.state(rt, 'upd', (s) => s.status === 'ready', 'ready');
  await env.produce('upd-topic', 'a');
  await hook.waitFor(() => got('upd').length === 1, 'first');
  const started = rt.exporterState('default', 'upd')!['start-time'];
  await env.webhook({ ...(base('upd', 'upd-topic', { 'all-sites': true }) as object), data: 'v2:${MSG_PAYLOAD}' });
  await env.state(rt, 'upd', (x) => x.status === 'ready' && x['start-time'] !== started, 'restarted');
  await env.produce('upd-topic', 'b');
  await hook.waitFor(() => got('upd').length === 2, 'second');
  assert.equal(got('upd'), ['a', 'v2:b']);
  assert.equal(await groups('upd-topic'), ['edgeplane:default:upd']);
});

test('placed elsewhere keeps the group; deleting destroys it and the state', async () => {
  await env.webhook(base('del', 'del-topic', { 'all-sites': true }));
  await env.state(rt, 'del', (s) => s.status === 'ready', 'ready');
  await env.webhook(base('del', 'del-topic', { sites: ['other'] }));
  await env.state(rt, 'del', (s) => s.status === 'stopped', 'stopped');
  assert.equal(await groups('del-topic'), ['edgeplane:default:del']);
  await env.del('volga/webhooks/del');
  await eventually(() => rt.exporterState('default', 'del') === undefined, 'state gone');
  await eventually(async () => (await groups('del-topic')).length === 0, 'group destroyed');
  await eventually(async () => (await env.store.kvGet('state:webhook:default/del')) === undefined, 'kv state removed');
});

test('topic-patterns: new matching topics are found and read from their start', async () => {
  await env.produce('pat-old', 'before');
  await env.webhook({
    ...(base('pat', 'pat-named', { 'all-sites': true }) as object),
    'topic-patterns': ['^pat-(new|old)'],
    'start-position': 'beginning',
  });
  await env.state(rt, 'pat', (s) => (s['consumed-topics'] as string[]).includes('pat-old'), 'existing topic consumed');
  await env.produce('pat-new', 'fresh');
  await env.produce('pat-other', 'not matched');
  await hook.waitFor(() => got('pat').length === 2, 'both delivered');
  assert.equal(got('pat').sort(), ['before', 'fresh']);
  const s = rt.exporterState('default', 'pat')!;
  assert.equal(s['consumed-topics'], ['pat-named', 'pat-new', 'pat-old']);
});

test('secrets: sealed store → error; restart after unseal re-reads them', async () => {
  await env.webhook({
    ...(base('sec', 'sec-topic', { 'all-sites': true }) as object),
    data: '${S}',
    variables: [{ name: 'S', 'value-from-vault-secret': { vault: 'v', secret: 's', key: 'k' } }],
  });
  const s = await env.state(rt, 'sec', (x) => x.status === 'error', 'error while sealed');
  assert.match(String(s['last-error']), /sealed/);
  sealed = false;
  // Secret errors are tried again (every 5 s; 200 ms here): unsealed, it starts by itself.
  await env.state(rt, 'sec', (x) => x.status === 'ready', 'ready once unsealed, without a restart');
  await env.produce('sec-topic', 'x');
  await hook.waitFor(() => got('sec').length === 1, 'delivered');
  secretData['default/v/s'] = { k: 'two' };
  await rt.restart('default', 'sec');
  await env.state(rt, 'sec', (x) => x.status === 'ready', 'ready');
  await env.produce('sec-topic', 'y');
  await hook.waitFor(() => got('sec').length === 2, 'delivered');
  assert.equal(got('sec'), ['one', 'two']);
});

test('a host made from a vault value is never shown: last-error says (secret)', async () => {
  secretData['default/v/host'] = { h: 'TopSecretHost42' };
  await env.webhook({
    ...(base('hidden', 'hidden-topic', { 'all-sites': true }) as object),
    // Its path shows a host made from a message value: hidden only when a vault value made it.
    url: 'http://${H}.invalid/x',
    tries: 1,
    'start-position': 'beginning',
    variables: [{ name: 'H', 'value-from-vault-secret': { vault: 'v', secret: 'host', key: 'h' } }],
  });
  await env.produce('hidden-topic', 'x');
  const s = await env.state(rt, 'hidden', (x) => typeof x['last-error'] === 'string', 'failed attempt');
  assert.match(String(s['last-error']), /^POST to http:\/\/\(secret\) failed: .*\(secret\)/);
  assert.not.match(JSON.stringify(s), /topsecrethost42/i, 'the vault value nowhere in the state');
});

test('a missing secret key is an error naming the variable; restart of an unknown exporter is false', async () => {
  await env.webhook({
    ...(base('sec2', 'sec2-topic', { 'all-sites': true }) as object),
    data: '${S}',
    variables: [{ name: 'S', 'value-from-vault-secret': { vault: 'v', secret: 's', key: 'nokey' } }],
  });
  const s = await env.state(rt, 'sec2', (x) => x.status === 'error', 'error');
  assert.match(String(s['last-error']), /variable S/);
  // Tried again every 200 ms here, but not restarted while the secret stays as it is: the
  // error keeps its time (each restart set it again, and logged two status changes).
  await sleep(700);
  assert.is(rt.exporterState('default', 'sec2')?.['last-error-time'], s['last-error-time'], 'no restart');
  assert.is(rt.exporterState('default', 'sec2')?.status, 'error');
  assert.is(await rt.restart('default', 'nope'), false);
});

test('an invalid configuration is status error with the field in last-error', async () => {
  await env.webhook({
    ...(base('bad', 'bad-topic', { 'all-sites': true }) as object),
    'match-re': ['(a)\\1'],
    'retry-interval': '1s',
  });
  const s = await env.state(rt, 'bad', (x) => x.status === 'error', 'error');
  assert.match(String(s['last-error']), /match-re\[0\]/);
});

test('each site keeps its own state: one where the exporter is placed elsewhere does not hide the running one', async () => {
  await env.webhook(base('multi', 'multi-topic', { sites: ['edge1'] }));
  await env.state(rt, 'multi', (s) => s.status === 'ready', 'ready at edge1');
  const other = await env.start({ site: 'edge2' });
  await env.state(other, 'multi', (s) => s.status === 'stopped' && s.site === 'edge2', 'stopped at edge2');
  await env.produce('multi-topic', 'm');
  await hook.waitFor(() => got('multi').length === 1, 'delivered by edge1');
  const kv = await eventually(async () => {
    const raw = await env.store.kvGet(webhookStateKey('default', 'multi', 'edge1'));
    const v = raw ? JSON.parse(raw) : undefined;
    return v && v.delivered === 1 ? v : undefined;
  }, 'kv state of edge1');
  assert.is(kv.site, 'edge1');
  assert.is(kv.status, 'ready');
  const there = JSON.parse((await env.store.kvGet(webhookStateKey('default', 'multi', 'edge2'))) ?? '{}');
  assert.is(there.status, 'stopped');
  assert.is(there.site, 'edge2');
});

test("only this site's own site object concerns its exporters (a control plane holds a fleet of them)", async () => {
  const store = await openTestStore('embedded');
  const bus = await openTestBus('embedded');
  let reads = 0;
  const counting: Store = {
    ...store,
    etags: (prefix) => {
      reads++;
      return store.etags(prefix);
    },
    etagsSince: (at) => {
      reads++;
      return store.etagsSince(at);
    },
  };
  const sup = new Supervisor({
    site: 'hq',
    rootTenant: 'default',
    globalDomain: 'example.test',
    store: counting,
    bus,
    secrets: undefined,
    clock: systemClock,
    attemptTimeoutMs: 1000,
    pollMs: 100,
    consumer: 'c',
    agents: new AgentPool(),
  });
  try {
    await sup.reconcile();
    // Runs that onStoreChange starts (each reads the store's ETags, or what changed since, once).
    const started = async (keys: string[]) => {
      const before = reads;
      sup.onStoreChange(keys);
      await sleep(50);
      return reads - before;
    };
    assert.is(await started(['default/sites/edge-7']), 0, "another site's object");
    assert.is(await started(['default/system/tenants/acme']), 1, 'a tenant');
    assert.is(await started(['default/sites/hq']), 1, "this site's object");
    assert.is(await started(['acme/sites/hq']), 1, "this site's object in another tenant");
    assert.is(await started(['default/volga/webhooks/w']), 1, 'an exporter');
    assert.is(await started(['default/sites/edge-8', 'default/sites/hq']), 1, 'one of them concerns it');
  } finally {
    await sup.stop(1000);
    await bus.close();
    await store.close();
  }
});

test.run();
