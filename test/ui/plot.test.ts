/**
 * The throughput plot of the status page in Debian's chromium (headless, playwright-core):
 * a catch-up burst does not squash the steady rate (the y-scale ends near the steady rate,
 * the burst is marked at the top edge with its real rate written beside it), and the lag (the
 * history's samples, then the page's polls) is a dashed line on its own axis (right; the axes are drawn on the canvas: see the screenshot). The exporters' state and history are the server's
 * replies with their numbers scripted through playwright's routing, so the burst and the lag
 * are known; the page, its login and its polling are the real ones. The screenshot is
 * docs/img/throughput-plot.png (README, Status page); `robustTop` itself is tested in node.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { copyFileSync, mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
import { robustTop } from '../../src/ui/page/plot-scale.js';
import { spawnApiProc } from '../helpers/api-proc.js';
import { ensureCommand } from '../helpers/apt.js';
import { tempDir } from '../helpers/backends.js';

test('robustTop: the largest rate unless one burst towers over the steady rates', () => {
  assert.equal(robustTop([]), { top: 1, clipped: false });
  assert.equal(robustTop([0, 0, 3, 5]), { top: 5, clipped: false }, 'too few to judge');
  const steady = Array.from({ length: 40 }, (_, i) => 10 + (i % 5));
  assert.equal(robustTop(steady), { top: 14, clipped: false });
  const burst = robustTop([...steady, 900]);
  assert.ok(burst.clipped);
  assert.ok(burst.top >= 14 && burst.top < 60, String(burst.top));
  assert.equal(robustTop([...steady, 50]), { top: 50, clipped: false }, 'a peak within 4× is shown whole');
});

/** 15 minutes of samples every 5 s: 12/s steady, a backlog of up to 5,700, then one bucket that delivered 6,000 at once. */
function history(now: number): Array<{ time: string; delivered: number; lag: number }> {
  const out: Array<{ time: string; delivered: number; lag: number }> = [];
  let delivered = 0;
  for (let t = now - 14 * 60_000; t <= now; t += 5000) {
    delivered += 60 + ((t / 5000) % 3) * 5;
    if (out.length === 60) delivered += 6000;
    // A backlog builds while the webhook is down, and the burst drains it.
    const lag = out.length < 40 ? 0 : out.length < 60 ? (out.length - 40) * 300 : 0;
    out.push({ time: new Date(t).toISOString(), delivered, lag });
  }
  return out;
}

test('the plot in chromium: a burst is marked above a robust scale, the lag has its own axis; screenshot', async () => {
  ensureCommand('chromium', 'chromium');
  const server = await spawnApiProc({ DATA_DIR: tempDir(), ADMIN_PASSWORD: 'plot-admin-password' });
  const profile = mkdtempSync(join(tmpdir(), 'edgeplane-plot-chromium-'));
  let browser: BrowserContext | undefined;
  try {
    browser = await chromium.launchPersistentContext(profile, {
      executablePath: '/usr/bin/chromium',
      viewport: { width: 1200, height: 760 },
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
    });
    const page = browser.pages()[0] ?? (await browser.newPage());
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    const now = Date.now();
    let polls = 0;
    await page.route('**/v1/state/volga/webhooks', (route) => {
      polls++;
      const lag = 400 + 60 * polls;
      void route.fulfill({
        contentType: 'application/json',
        body: JSON.stringify([
          { name: 'orders', status: 'ready', delivered: 9000 + polls * 24, 'topic-lag': [{ topic: 'orders', lag }] },
        ]),
      });
    });
    await page.route('**/v1/state/volga/webhooks/orders/history', (route) =>
      route.fulfill({
        contentType: 'application/json',
        body: JSON.stringify({ name: 'orders', 'interval-seconds': 5, samples: history(now), errors: [] }),
      }),
    );
    await page.goto(`${server.url}/ui/`);
    await page.fill('input[name=password]', 'plot-admin-password');
    await page.click('button[type=submit]');
    // The history's lag, and the page's own polls after it.
    await page.waitForFunction(() => Number(document.getElementById('plot')?.dataset.lagMax) >= 5700, null, {
      timeout: 30_000,
    });
    const data = await page.evaluate(() => ({ ...document.getElementById('plot')?.dataset }));
    assert.ok(Number(data.maxRate) >= 1200, `the burst's rate is known: ${data.maxRate}`);
    assert.ok(Number(data.scaleTop) < 40, `the scale ends near the steady rate: ${data.scaleTop}`);
    assert.is(data.bursts, '1', 'one bucket above the scale, marked');
    const legend = (await page.textContent('#plot')) ?? '';
    assert.match(legend, /burst \(off the scale\)/);
    assert.match(legend, /lag \(all exporters\)/);
    const shot = join(mkdtempSync(join(tmpdir(), 'edgeplane-plot-shot-')), 'throughput-plot.png');
    await page.locator('#plot').screenshot({ path: shot });
    assert.ok(statSync(shot).size > 5_000);
    if (process.env.EDGEPLANE_UPDATE_SCREENSHOTS === '1') copyFileSync(shot, 'docs/img/throughput-plot.png');
    process.stdout.write(`throughput plot screenshot: ${shot}\n`);
    assert.equal(problems, []);
  } finally {
    await browser?.close();
    await server.stop();
  }
});

test.run();
