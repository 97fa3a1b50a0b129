/**
 * Acknowledgements in the sync request's body (POST /v1/fleet/sites/<name>/sync), against a real
 * control-plane process whose request time-outs are set low (HTTP_HEADERS_TIMEOUT_MS and
 * HTTP_REQUEST_TIMEOUT_MS 400 ms): the stream and its body outlive the request time-out; each
 * line that is a version is recorded as the site's config-version, other lines are skipped; a
 * line longer than any version stops the reading but not the stream. A real edge site on
 * FLEET_ACKS=stream (the default) and one on FLEET_ACKS=post both report what they applied.
 */
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { fetch as undiciFetch } from 'undici';
import { generateSiteKey } from '../../src/secrets/sealed.js';
import { tempDir } from '../helpers/backends.js';
import { spawnApiProc, type ApiProc } from '../helpers/api-proc.js';
import { startServe, type ServeProc } from '../helpers/serve-proc.js';
import { client, type Client } from '../helpers/fleet.js';
import { freshRedisDb } from '../helpers/redis.js';
import { eventually } from '../helpers/wait.js';

const password = 'acks-in-stream-password';
const tmp = () => tempDir('edgeplane-acks-in-stream-');
/** The control plane as users run it (worker.ts: its server has the request time-outs). */
let cp: ServeProc;
let cpUrl = '';
let admin: Client;
const procs: ApiProc[] = [];

test.before(async () => {
  cp = startServe({
    PORT: '0',
    REDIS_URL: await freshRedisDb(7),
    SITE: 'hq',
    ADMIN_PASSWORD: password,
    DATA_DIR: tmp(),
    HTTP_HEADERS_TIMEOUT_MS: '400',
    HTTP_REQUEST_TIMEOUT_MS: '400',
  });
  cpUrl = `http://127.0.0.1:${await cp.listening()}`;
  admin = client(cpUrl, password);
});

test.after(async () => {
  for (const p of procs) await p.stop();
  cp.kill('SIGTERM');
  await cp.exited();
});

async function newSite(name: string): Promise<string> {
  const r = await admin.call('PUT', `/v1/config/sites/${name}`, { name, type: 'edge', labels: { n: '0' } });
  assert.is(r.status, 201, r.text);
  return ((await admin.call('POST', `/v1/state/sites/${name}/issue-token`)).body as { token: string }).token;
}

async function configVersion(name: string): Promise<unknown> {
  const r = await admin.call('GET', `/v1/state/sites/${name}`);
  return (r.body as Record<string, unknown>)['config-version'];
}

test('the body outlives the request time-out; versions are recorded, other lines skipped', async () => {
  const token = await newSite('edge-raw');
  const events: EventSourceMessage[] = [];
  let body!: ReadableStreamDefaultController<Uint8Array>;
  const enc = new TextEncoder();
  const abort = new AbortController();
  const res = await undiciFetch(`${cpUrl}/v1/fleet/sites/edge-raw/sync`, {
    method: 'POST',
    duplex: 'half',
    headers: {
      authorization: `Bearer ${token}`,
      'x-edgeplane-site-key': generateSiteKey().publicKey,
      'content-type': 'text/plain',
    },
    body: new ReadableStream<Uint8Array>({ start: (c) => void (body = c).enqueue(enc.encode('\n')) }),
    signal: abort.signal,
  });
  assert.is(res.status, 200);
  const parser = createParser({ onEvent: (e) => events.push(e) });
  const decoder = new TextDecoder();
  const pump = (async () => {
    for await (const chunk of res.body!) parser.feed(decoder.decode(chunk as Uint8Array, { stream: true }));
  })().catch(() => undefined);
  try {
    await eventually(() => events.some((e) => e.event === 'snapshot'), 'the snapshot', 10_000);
    const snapshot = events.find((e) => e.event === 'snapshot')!.id!;
    // Three request time-outs (and checks) pass with the body still open.
    await new Promise((r) => setTimeout(r, 1500));
    body.enqueue(enc.encode(`not a version\n\n${snapshot.slice(0, 3)}`));
    body.enqueue(enc.encode(`${snapshot.slice(3)}\n`)); // a line split across two chunks
    await eventually(async () => (await configVersion('edge-raw')) === snapshot, 'the snapshot acknowledged', 10_000);
    // A change after that: the stream is alive, and its acknowledgement is taken too.
    const r = await admin.call('PUT', '/v1/config/sites/edge-raw', {
      name: 'edge-raw',
      type: 'edge',
      labels: { n: '1' },
    });
    assert.is(r.status, 204, r.text);
    await eventually(() => events.some((e) => e.event === 'change'), 'the change arrived', 10_000);
    const change = events.find((e) => e.event === 'change')!.id!;
    body.enqueue(enc.encode(`${change}\n`));
    await eventually(async () => (await configVersion('edge-raw')) === change, 'the change acknowledged', 10_000);
    // A line longer than any version: the acknowledgements stop being read, the stream goes on.
    body.enqueue(enc.encode('x'.repeat(500)));
    const r2 = await admin.call('PUT', '/v1/config/sites/edge-raw', {
      name: 'edge-raw',
      type: 'edge',
      labels: { n: '2' },
    });
    assert.is(r2.status, 204, r2.text);
    await eventually(() => events.filter((e) => e.event === 'change').length === 2, 'the next change arrived', 10_000);
    assert.is(await configVersion('edge-raw'), change, 'nothing read after the over-long line');
    assert.not.match(cp.output(), /FATAL|Unhandled|uncaught/i, 'the control plane logged no crash');
  } finally {
    abort.abort();
    await pump;
  }
});

for (const acks of ['stream', 'post'] as const)
  test(`a real edge site with FLEET_ACKS=${acks} reports what it applied`, async () => {
    const name = `edge-${acks}`;
    const token = await newSite(name);
    const site = await spawnApiProc({
      CONTROL_PLANE_URL: cpUrl,
      SITE: name,
      SITE_TOKEN: token,
      DATA_DIR: tmp(),
      FLEET_ACKS: acks,
    });
    procs.push(site);
    const inSync = async () => (await admin.call('GET', `/v1/state/sites/${name}`)).body as Record<string, unknown>;
    await eventually(async () => (await inSync())['in-sync'] === true, 'the site in sync', 20_000);
    // Past the request time-out, a change reaches the site and its acknowledgement the control plane.
    await new Promise((r) => setTimeout(r, 1000));
    const r = await admin.call('PUT', `/v1/config/sites/${name}`, { name, type: 'edge', labels: { n: '9' } });
    assert.is(r.status, 204, r.text);
    await eventually(
      async () => {
        const s = await inSync();
        return s['in-sync'] === true && s.connection === 'connected';
      },
      'the change applied and acknowledged on the same stream',
      20_000,
    );
    const local = await client(site.url, password).call('GET', `/v1/config/sites/${name}`);
    assert.is((local.body as { labels: Record<string, string> }).labels.n, '9');
  });

test.run();
