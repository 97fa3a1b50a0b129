/**
 * Secrets reach edge sites sealed for each site, end to end, in processes on loopback: a
 * control plane on the test Redis, one edge site on a Redis server of its own and one on the
 * embedded store, each running an exporter (placed by label) that sends a vault secret in a
 * header to a webhook sink. Every key, hash field, stream entry and set member of both Redis
 * servers, every file of the embedded site's DATA_DIR and every log line is then searched for
 * the secret's value, in clear, base64, base64url and hex: it is nowhere. A secret changed at
 * the control plane reaches the sites, whose exporters send the new value; a site restarted
 * while cut off still opens its secrets, one whose secret store is sealed syncs and opens them
 * once unsealed; a site whose key pair changed (its key wiped, as on a
 * reinstall) gets its secrets sealed again for the new key.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from 'redis';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnApiProc, type ApiProc } from '../helpers/api-proc.js';
import { client, SITE_WAIT, type Client } from '../helpers/fleet.js';
import { eventually } from '../helpers/wait.js';
import { freePort, freshRedisDb, startRedis, type RedisServer } from '../helpers/redis.js';
import { startWebhookServer, type WebhookServer } from '../helpers/webhook-server.js';

const password = 'fleet-secrets-password';
const dirs: string[] = [];
const procs = new Set<ApiProc>();
process.once('exit', () => {
  for (const p of procs) p.child.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), 'edgeplane-fleet-secrets-'));
  dirs.push(d);
  return d;
};

const first = `first-${randomBytes(12).toString('hex')}`;
const second = `second-${randomBytes(12).toString('hex')}`;
const secretKey = 'default/strongbox/vaults/pay/secrets/api';

let cpRedisUrl = '';
let cp: ApiProc;
let admin: Client;
let sink: WebhookServer;
let siteRedis: RedisServer;
const sites = new Map<string, { proc: ApiProc; admin: Client; env: Record<string, string> }>();
const embeddedDir = tmp();
let produced = 0;

async function startSite(name: string, env: Record<string, string>): Promise<void> {
  const proc = await spawnApiProc({ ...env, LOG_LEVEL: 'debug' });
  procs.add(proc);
  sites.set(name, { proc, admin: client(proc.url, password), env });
}

async function stopSite(name: string): Promise<void> {
  const s = sites.get(name)!;
  await s.proc.stop();
  procs.delete(s.proc);
}

/** Produces at `site` until its exporter delivers a message carrying `token`. */
async function deliversWith(site: string, token: string): Promise<void> {
  const s = sites.get(site)!;
  await eventually(
    async () => {
      const payload = `${site}-${produced++}`;
      const r = await s.admin.call('POST', '/v1/state/volga/topics/readings/produce', { payload });
      if (r.status !== 201) return false;
      const deadline = Date.now() + 3000;
      for (let i = 0; i < 60 && Date.now() < deadline; i++) {
        const got = sink.delivered().find((q) => q.body === payload);
        if (got) return got.headers['x-api-token'] === token;
        await new Promise((res) => setTimeout(res, 50));
      }
      return false;
    },
    `site ${site} delivers with the current secret value`,
    { ...SITE_WAIT, timeoutMs: 60_000 },
  );
}

/** Every key of a Redis database with its content: strings, hash fields, stream entries, members. */
async function redisDump(url: string): Promise<string> {
  const c = createClient({ url });
  await c.connect();
  const out: string[] = [];
  try {
    for await (const batch of c.scanIterator({ COUNT: 500 })) {
      for (const key of batch) {
        out.push(key);
        const type = await c.type(key);
        if (type === 'string') out.push((await c.get(key)) ?? '');
        else if (type === 'hash') out.push(JSON.stringify(await c.hGetAll(key)));
        else if (type === 'stream') out.push(JSON.stringify(await c.xRange(key, '-', '+')));
        else if (type === 'set') out.push(JSON.stringify(await c.sMembers(key)));
        else if (type === 'list') out.push(JSON.stringify(await c.lRange(key, 0, -1)));
        else if (type === 'zset') out.push(JSON.stringify(await c.zRange(key, 0, -1)));
        else out.push(`(unread type ${type})`);
      }
    }
  } finally {
    await c.quit();
  }
  assert.ok(out.length > 20, `the scan of ${url} read the database (${out.length} items)`);
  return out.join('\n');
}

/** Every file under `dir`, as text (binary content shows its bytes as latin1). */
function filesDump(dir: string): string {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else out.push(p, readFileSync(p).toString('latin1'));
    }
  };
  walk(dir);
  return out.join('\n');
}

function assertNowhere(where: string, text: string, values: string[]): void {
  for (const v of values) {
    const b = Buffer.from(v);
    for (const form of [v, b.toString('base64'), b.toString('base64url'), b.toString('hex')])
      assert.not.ok(text.includes(form), `${where} holds the secret value (${form === v ? 'in clear' : 'encoded'})`);
  }
}

async function scanEverything(values: string[]): Promise<void> {
  const cpDump = await redisDump(cpRedisUrl);
  assert.ok(cpDump.includes('ep:fleet:edge-r:log') && cpDump.includes('ep:fleet:edge-e:set'), 'the change logs');
  assert.ok(cpDump.includes('sealed:v1:'), 'the control plane holds sealed values for the sites');
  assertNowhere("the control plane's Redis", cpDump, values);
  const siteDump = await redisDump(siteRedis.url);
  assert.ok(siteDump.includes(secretKey), "the secret is in edge-r's store");
  assertNowhere("edge-r's Redis", siteDump, values);
  const files = filesDump(embeddedDir);
  assert.ok(files.includes('strongbox/vaults/pay/secrets/api'), "the secret is in edge-e's files");
  assertNowhere("edge-e's DATA_DIR", files, values);
  for (const p of [cp, ...[...sites.values()].map((s) => s.proc)]) assertNowhere('a log', p.output(), values);
}

async function hget(url: string, key: string, field: string): Promise<string | undefined> {
  const c = createClient({ url });
  await c.connect();
  try {
    return (await c.hGet(key, field)) ?? undefined;
  } finally {
    await c.quit();
  }
}

/** The secret as the control plane holds it for `site` (materialised set) and as edge-r stores it. */
async function sealedFor(site: string): Promise<string> {
  const text = await hget(cpRedisUrl, `ep:fleet:${site}:set`, secretKey);
  const doc = JSON.parse(text ?? '{}') as { data?: { token?: string } };
  return doc.data?.token ?? '';
}

test.before(async () => {
  cpRedisUrl = await freshRedisDb(5);
  cp = await spawnApiProc({
    REDIS_URL: cpRedisUrl,
    SITE: 'hq',
    ADMIN_PASSWORD: password,
    DATA_DIR: tmp(),
    LOG_LEVEL: 'debug',
  });
  procs.add(cp);
  admin = client(cp.url, password);
  sink = await startWebhookServer();
  siteRedis = await startRedis();
  const setup = await admin.call('PATCH', '/v1/config', [
    { 'x-path': '/v1/config/sites/edge-r', labels: { role: 'pos' } },
    { 'x-path': '/v1/config/sites/edge-e', labels: { role: 'pos' } },
    { 'x-path': '/v1/config/strongbox/vaults/pay' },
    { 'x-path': '/v1/config/strongbox/vaults/pay/secrets/api', data: { token: first } },
    {
      'x-path': '/v1/config/volga/webhooks/signed',
      topics: ['readings'],
      'site-placement': { 'match-site-labels': 'role = pos' },
      url: `${sink.url}/signed`,
      data: '${MSG_PAYLOAD}',
      headers: [{ name: 'x-api-token', value: '${TOKEN}' }],
      variables: [{ name: 'TOKEN', 'value-from-vault-secret': { vault: 'pay', secret: 'api', key: 'token' } }],
    },
  ]);
  assert.is(setup.status, 204, setup.text);
  const token = async (name: string) =>
    ((await admin.call('POST', `/v1/state/sites/${name}/issue-token`)).body as { token: string }).token;
  await startSite('edge-r', {
    CONTROL_PLANE_URL: cp.url,
    SITE: 'edge-r',
    SITE_TOKEN: await token('edge-r'),
    REDIS_URL: siteRedis.url,
    DATA_DIR: tmp(),
    API_PROC_RUNTIME: '1',
  });
  await startSite('edge-e', {
    CONTROL_PLANE_URL: cp.url,
    SITE: 'edge-e',
    SITE_TOKEN: await token('edge-e'),
    DATA_DIR: embeddedDir,
    API_PROC_RUNTIME: '1',
  });
});

test.after(async () => {
  for (const p of [...procs]) await p.stop();
  await sink.close();
  await siteRedis.dispose();
});

test("both sites deliver with the secret's value; no store, log or history holds it in clear", async () => {
  await deliversWith('edge-r', first);
  await deliversWith('edge-e', first);
  // The site keeps exactly what the control plane holds for it: the sealed form.
  const stored = await hget(siteRedis.url, `ep:cfg:${secretKey}`, 'v');
  const atSite = (JSON.parse(stored ?? '{}') as { data?: { token?: string } }).data?.token ?? '';
  assert.match(atSite, /^sealed:v1:/);
  assert.is(atSite, await sealedFor('edge-r'));
  assert.is.not(await sealedFor('edge-e'), atSite, 'each site has its own sealing');
  // Config reads at the site redact it as everywhere.
  const read = await sites.get('edge-r')!.admin.call('GET', `/v1/config/strongbox/vaults/pay/secrets/api`);
  assert.equal(read.body, { name: 'api', data: { token: '(secret)' } });
  await scanEverything([first]);
});

test('a secret changed at the control plane reaches the sites, whose exporters send the new value', async () => {
  const r = await admin.call('PUT', '/v1/config/strongbox/vaults/pay/secrets/api', {
    name: 'api',
    data: { token: second },
  });
  assert.is(r.status, 204, r.text);
  await deliversWith('edge-r', second);
  await deliversWith('edge-e', second);
  await scanEverything([first, second]);
});

test('a site restarted while its control plane is out of reach opens its secrets and delivers', async () => {
  await stopSite('edge-e');
  const env = sites.get('edge-e')!.env;
  await startSite('edge-e', { ...env, CONTROL_PLANE_URL: `http://127.0.0.1:${await freePort()}` });
  await deliversWith('edge-e', second);
  assert.match(sites.get('edge-e')!.proc.output(), /sync with the control plane failed/);
  sites.get('edge-e')!.env = env;
});

test('a site whose secret store is sealed still syncs; its secrets open once it is unsealed', async () => {
  await stopSite('edge-e');
  const env = sites.get('edge-e')!.env;
  await startSite('edge-e', { ...env, STRONGBOX_AUTO_UNSEAL: 'false' });
  const at = sites.get('edge-e')!.admin;
  const labels = { role: 'pos', tier: 'sealed-test' };
  assert.is((await admin.call('PATCH', '/v1/config/sites/edge-e', { labels })).status, 204);
  await eventually(
    async () => {
      const r = await at.call('GET', '/v1/config/sites/edge-e');
      return (r.body as { labels?: { tier?: string } }).labels?.tier === 'sealed-test';
    },
    'a change reaches the sealed site',
    SITE_WAIT,
  );
  const sealed = await at.call('GET', '/v1/state/volga/webhooks/signed');
  assert.is(sealed.status, 503, 'the site is sealed');
  const key = readFileSync(join(embeddedDir, 'strongbox.key'), 'utf8').trim();
  const unseal = await at.call('POST', '/v1/strongbox/unseal', { key });
  assert.ok(unseal.status < 300, unseal.text);
  assert.is((await at.call('POST', '/v1/state/volga/webhooks/signed/restart')).status < 300, true);
  await deliversWith('edge-e', second);
  sites.get('edge-e')!.env = env;
});

test('a new token: the old stream ends and the site keeps its secrets; with the new token they are sealed again', async () => {
  const next = (await admin.call('POST', '/v1/state/sites/edge-e/issue-token')).body as { token: string };
  // The control plane forgot the key presented with the old token: it seals nothing more for it.
  await eventually(async () => (await sealedFor('edge-e')) === '', 'no secret sealed for the forgotten key', {
    ...SITE_WAIT,
    timeoutMs: 30_000,
  });
  const at = sites.get('edge-e')!.admin;
  assert.is((await at.call('GET', '/v1/config/strongbox/vaults/pay/secrets/api')).status, 200, 'kept at the site');
  await deliversWith('edge-e', second);
  await stopSite('edge-e');
  const env = { ...sites.get('edge-e')!.env, SITE_TOKEN: next.token };
  await startSite('edge-e', env);
  await eventually(
    async () => (await sealedFor('edge-e')) !== '',
    'sealed again for the key presented with the new token',
    SITE_WAIT,
  );
  await deliversWith('edge-e', second);
});

test('a site whose key pair changed gets its secrets sealed again for the new key', async () => {
  const before = await sealedFor('edge-r');
  await stopSite('edge-r');
  // A reinstalled site: same store, but its key pair is gone (a new one is made at start).
  const c = createClient({ url: siteRedis.url });
  await c.connect();
  assert.is(await c.del('ep:kv:fleet:site-key'), 1, "edge-r's key pair was in its kv area");
  await c.quit();
  await startSite('edge-r', sites.get('edge-r')!.env);
  await eventually(
    async () => (await sealedFor('edge-r')).slice(0, 26) !== before.slice(0, 26),
    'sealed again',
    SITE_WAIT,
  );
  await deliversWith('edge-r', second);
  await scanEverything([first, second]);
});

test.run();
