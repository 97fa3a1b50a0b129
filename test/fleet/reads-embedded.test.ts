/**
 * `site=` reads with a control plane on the embedded store (one process: the relay and the
 * reports live in process): a site's exporter state read live at the control plane, then,
 * with the site stopped, its last report with `x-state-age`.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnApiProc, type ApiProc } from '../helpers/api-proc.js';
import { client, SITE_WAIT, type Client } from '../helpers/fleet.js';
import { tempDir } from '../helpers/backends.js';
import { eventually } from '../helpers/wait.js';

const password = 'fleet-embedded-password';
const tmp = () => tempDir('edgeplane-fleet-embedded-');

let cp: ApiProc;
let site: ApiProc | undefined;
let admin: Client;

test.before(async () => {
  cp = await spawnApiProc({ SITE: 'hq', ADMIN_PASSWORD: password, DATA_DIR: tmp(), FLEET_KEEPALIVE: '300ms' });
  admin = client(cp.url, password);
});

test.after(async () => {
  await site?.stop();
  await cp.stop();
});

type Exporter = { status?: string; site?: string };

test('embedded control plane: live site= read, then the last report with x-state-age', async () => {
  assert.is(
    (await admin.call('PUT', '/v1/config/sites/edge-1', { name: 'edge-1', labels: { region: 'eu' } })).status,
    201,
  );
  const hook = {
    name: 'w',
    url: 'http://127.0.0.1:9/never',
    topics: ['t'],
    'site-placement': { sites: ['edge-1'] },
    data: '${MSG_PAYLOAD}',
  };
  const put = await admin.call('PUT', '/v1/config/volga/webhooks/w', hook);
  assert.is(put.status, 201, put.text);
  const token = ((await admin.call('POST', '/v1/state/sites/edge-1/issue-token')).body as { token: string }).token;
  site = await spawnApiProc({
    CONTROL_PLANE_URL: cp.url,
    SITE: 'edge-1',
    SITE_TOKEN: token,
    DATA_DIR: tmp(),
    FLEET_REPORT_INTERVAL: '100ms',
    API_PROC_RUNTIME: '1',
  });
  await eventually(
    async () => {
      const r = await admin.call('GET', '/v1/state/volga/webhooks/w?site=edge-1');
      return r.status === 200 && (r.body as Exporter).status === 'ready' && r.headers.get('x-state-age') === null;
    },
    'the exporter ready at edge-1, read live at the control plane',
    SITE_WAIT,
  );
  const live = (await admin.call('GET', '/v1/state/volga/webhooks/w?site=edge-1')).body as Exporter;
  assert.is(live.site, 'edge-1');
  const own = (await admin.call('GET', '/v1/state/volga/webhooks/w')).body as Exporter;
  assert.is.not(own.site, 'edge-1', 'without site= the control plane answers for itself');
  await site.stop();
  site = undefined;
  await eventually(
    async () =>
      ((await admin.call('GET', '/v1/state/sites/edge-1')).body as { connection?: string }).connection ===
      'disconnected',
    'edge-1 disconnected',
    SITE_WAIT,
  );
  // (Its last status may be the one it had while shutting down: that is what it reported.)
  const stale = await admin.call('GET', '/v1/state/volga/webhooks/w?site=edge-1&fields=name,site');
  assert.is(stale.status, 200, stale.text);
  assert.match(stale.headers.get('x-state-age') ?? '', /^\d+$/);
  assert.equal(stale.body, { name: 'w', site: 'edge-1' });
});

test.run();
