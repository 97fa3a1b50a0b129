/**
 * The status page at a control plane with two edge sites running (processes on loopback), in
 * Debian's chromium (headless, playwright-core): the exporter placed on both has a row per
 * site (status, delivered, delivered/s, lag, last error with its time) under its fleet row,
 * its staged rollout (two waves: edge-1, then edge-2) has its row in the rollouts card, and the
 * sites table lists the exporters each site runs. The page is saved as a screenshot.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { copyFileSync, mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
import { spawnApiProc, type ApiProc } from '../helpers/api-proc.js';
import { ensureCommand } from '../helpers/apt.js';
import { client, SITE_WAIT, type Client } from '../helpers/fleet.js';
import { tempDir } from '../helpers/backends.js';
import { freshRedisDb } from '../helpers/redis.js';
import { eventually } from '../helpers/wait.js';
import { startWebhookServer, type WebhookServer } from '../helpers/webhook-server.js';

const password = 'fleet-ui-password';

test('a control plane with two sites: a row per site under the exporter, the sites with what they run', async () => {
  ensureCommand('chromium', 'chromium');
  const sink: WebhookServer = await startWebhookServer();
  sink.script((_n, req) => (req.path === '/edge-2' ? { status: 500, body: 'edge-2 sink down' } : { status: 200 }));
  const procs: ApiProc[] = [];
  let browser: BrowserContext | undefined;
  try {
    const cp = await spawnApiProc({
      REDIS_URL: await freshRedisDb(7),
      SITE: 'hq',
      ADMIN_PASSWORD: password,
      DATA_DIR: tempDir('edgeplane-fleet-ui-'),
    });
    procs.push(cp);
    const admin: Client = client(cp.url, password);
    const siteAdmins: Client[] = [];
    for (const name of ['edge-1', 'edge-2']) {
      const r = await admin.call('PUT', `/v1/config/sites/${name}`, { name, type: 'edge', labels: { region: 'eu' } });
      assert.is(r.status, 201, r.text);
      const token = ((await admin.call('POST', `/v1/state/sites/${name}/issue-token`)).body as { token: string }).token;
      const site = await spawnApiProc({
        CONTROL_PLANE_URL: cp.url,
        SITE: name,
        SITE_TOKEN: token,
        DATA_DIR: tempDir('edgeplane-fleet-ui-site-'),
        FLEET_REPORT_INTERVAL: '100ms',
        API_PROC_RUNTIME: '1',
      });
      procs.push(site);
      siteAdmins.push(client(site.url, password));
    }
    const hook = {
      name: 'eu-hook',
      url: `${sink.url}/\${SYS_SITE}`,
      topics: ['readings'],
      'site-placement': { 'match-site-labels': 'region = eu' },
      data: '${MSG_PAYLOAD}',
      'retry-interval': '200ms',
      'max-retry-interval': '500ms',
      rollout: { waves: [{ percent: 50 }], 'healthy-for': '1s' },
    };
    assert.is((await admin.call('PUT', '/v1/config/volga/webhooks/eu-hook', hook)).status, 201);
    for (const s of siteAdmins)
      await eventually(
        async () =>
          ((await s.call('GET', '/v1/state/volga/webhooks/eu-hook')).body as { status?: string }).status === 'ready',
        'the exporter runs at each site',
        SITE_WAIT,
      );
    for (const [i, s] of siteAdmins.entries())
      assert.is((await s.call('POST', '/v1/state/volga/topics/readings/produce', { payload: `m${i}` })).status, 201);
    await sink.waitFor((reqs) => reqs.some((r) => r.path === '/edge-1' && r.status === 200), 'edge-1 delivered');

    browser = await chromium.launchPersistentContext(mkdtempSync(join(tmpdir(), 'edgeplane-fleet-ui-chromium-')), {
      executablePath: '/usr/bin/chromium',
      viewport: { width: 1500, height: 800 },
      headless: true,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
      ],
    });
    const page = browser.pages()[0] ?? (await browser.newPage());
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(`console: ${m.text()}`);
    });
    await page.goto(`${cp.url}/ui/`);
    await page.fill('input[name=password]', password);
    await page.click('button[type=submit]');
    const rowText = (site: string) => page.textContent(`tr.site-row[data-exporter="eu-hook"][data-site="${site}"]`);
    await page.waitForFunction(
      () => {
        const e1 = document.querySelector('tr.site-row[data-site="edge-1"] td.delivered')?.textContent;
        const e2 = document.querySelector('tr.site-row[data-site="edge-2"]')?.textContent ?? '';
        return e1 === '1' && e2.includes('retrying') && e2.includes('500');
      },
      null,
      { timeout: 30_000 },
    );
    assert.match((await rowText('edge-1')) ?? '', /edge-1.*ready/);
    assert.match((await rowText('edge-2')) ?? '', /\d{1,2}:\d{2}:\d{2}.*500/, 'the last error with its time');
    assert.match((await page.textContent('tr[data-exporter="eu-hook"]:not(.site-row)')) ?? '', /eu-hook\s*retrying/);
    await page.waitForFunction(
      () => (document.getElementById('sites')?.textContent ?? '').includes('eu-hook (retrying)'),
      null,
      { timeout: 30_000 },
    );
    // The rollout: two waves (edge-1, then the rest); the state depends on when edge-2 failed.
    const rolloutRow = (await page.textContent('#rollouts tr[data-exporter="eu-hook"]')) ?? '';
    assert.match(rolloutRow, /^eu-hook\s*\d+\s*(progressing|paused|done)\s*[12]\s*[0-2] of 2/);
    assert.is(await page.isVisible('#rollouts-card'), true);
    const sites = (await page.textContent('#sites')) ?? '';
    assert.match(sites, /edge-1\s*edge\s*connected.*eu-hook \(ready\)/);
    const shot = join(mkdtempSync(join(tmpdir(), 'edgeplane-fleet-ui-shot-')), 'fleet-status-page.png');
    await page.screenshot({ path: shot, fullPage: true });
    assert.ok(statSync(shot).size > 10_000);
    // The README's picture (docs/img/fleet-status-page.png), refreshed on request.
    if (process.env.EDGEPLANE_UPDATE_SCREENSHOTS === '1') copyFileSync(shot, 'docs/img/fleet-status-page.png');
    process.stdout.write(`fleet status page screenshot: ${shot}\n`);
    assert.equal(problems, []);
  } finally {
    await browser?.close();
    for (const p of procs.reverse()) await p.stop();
    await sink.close();
  }
});

test.run();
