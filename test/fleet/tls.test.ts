/**
 * HTTPS between a site and its control plane, with a CA made at test time: a site given the
 * CA (CONTROL_PLANE_CA) syncs; a site without it refuses the certificate and syncs nothing.
 * Its acknowledgements come over HTTPS too (the site in sync at the control plane).
 * The control plane here runs on the embedded store (its change log in memory), the sites too.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnApiProc, type ApiProc } from '../helpers/api-proc.js';
import { client, startTlsProxy, SITE_WAIT } from '../helpers/fleet.js';
import { makeCerts } from '../helpers/tls.js';
import { eventually } from '../helpers/wait.js';
import { tempDir } from '../helpers/backends.js';

const password = 'fleet-tls-password';
const procs: ApiProc[] = [];
const tmp = () => tempDir('edgeplane-fleet-tls-');

let tls: { close(): Promise<void> } | undefined;
test.after(async () => {
  for (const p of procs) await p.stop();
  await tls?.close();
});

test('a site syncs over HTTPS with CONTROL_PLANE_CA, and not without it', async () => {
  const certs = makeCerts();
  const cp = await spawnApiProc({ SITE: 'hq', ADMIN_PASSWORD: password, DATA_DIR: tmp() });
  procs.push(cp);
  const proxy = await startTlsProxy(cp.port, certs);
  tls = proxy;
  const admin = client(cp.url, password);
  for (const name of ['tls-1', 'tls-2']) {
    const r = await admin.call('PUT', `/v1/config/sites/${name}`, { name, labels: { secure: 'yes' } });
    assert.is(r.status, 201, r.text);
  }
  assert.is(
    (
      await admin.call('PUT', '/v1/config/volga/webhooks/secure-hook', {
        name: 'secure-hook',
        url: 'http://127.0.0.1:9/',
        topics: ['t'],
        'site-placement': { 'match-site-labels': 'secure = yes' },
        data: '${MSG}',
      })
    ).status,
    201,
  );
  const tokenOf = async (name: string) =>
    ((await admin.call('POST', `/v1/state/sites/${name}/issue-token`)).body as { token: string }).token;
  const caFile = join(tmp(), 'ca.pem');
  writeFileSync(caFile, certs.caCert);
  const url = `https://localhost:${proxy.port}`;
  const good = await spawnApiProc({
    CONTROL_PLANE_URL: url,
    CONTROL_PLANE_CA: caFile,
    SITE: 'tls-1',
    SITE_TOKEN: await tokenOf('tls-1'),
    DATA_DIR: tmp(),
    ADMIN_PASSWORD: password,
    LOG_LEVEL: 'warn',
  });
  procs.push(good);
  const bad = await spawnApiProc({
    CONTROL_PLANE_URL: url,
    SITE: 'tls-2',
    SITE_TOKEN: await tokenOf('tls-2'),
    DATA_DIR: tmp(),
    ADMIN_PASSWORD: password,
    LOG_LEVEL: 'warn',
  });
  procs.push(bad);
  const atGood = client(good.url, password);
  await eventually(
    async () => (await atGood.call('GET', '/v1/config/volga/webhooks/secure-hook')).status === 200,
    'synced over HTTPS',
    SITE_WAIT,
  );
  // Its acknowledgements (a connection of their own, src/fleet/site/ack-post.ts) arrive over HTTPS too.
  await eventually(
    async () =>
      ((await admin.call('GET', '/v1/state/sites/tls-1')).body as { 'in-sync'?: unknown })['in-sync'] === true,
    'the control plane has the acknowledgement: in sync',
    SITE_WAIT,
  );
  await eventually(
    () => /sync with the control plane failed/.test(bad.output()),
    'the site without the CA says why',
    SITE_WAIT,
  );
  assert.match(bad.output(), /certificate/i);
  const atBad = client(bad.url, password);
  assert.is((await atBad.call('GET', '/v1/config/volga/webhooks/secure-hook')).status, 404, 'nothing synced');
});

test.run();
