/**
 * The status page: its static files are public (and nothing else is), the server-side
 * history of exporter counters (ring of samples, recent errors) on both stores, and the page
 * itself in Debian's chromium (headless, via playwright-core): it logs in, shows a live
 * exporter's numbers as messages produced during the test are delivered to a real webhook
 * server, draws the throughput plot, lists the sites, and is saved as a screenshot.
 */
import { suite, test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
import { DeliveredHistory } from '../../src/api/history.js';
import { webhookStateKey } from '../../src/store/keys.js';
import { startApi } from '../helpers/api.js';
import { spawnApiProc, type ApiProc } from '../helpers/api-proc.js';
import { ensureCommand } from '../helpers/apt.js';
import { startWebhookServer, type WebhookServer } from '../helpers/webhook-server.js';
import { forEachBackend, type Backend } from '../helpers/backends.js';
import { freshRedisDb } from '../helpers/redis.js';
import { eventually } from '../helpers/wait.js';

function historySuite(backend: Backend): void {
  const t = suite(`status page: files and history (${backend})`);
  t('static files need no token; unknown files are 404; the data routes still need one', async () => {
    const api = await startApi(backend);
    try {
      const page = await api.req('GET', '/ui/', { headers: { authorization: '' } });
      assert.is(page.status, 200);
      assert.match(page.headers.get('content-type') ?? '', /^text\/html/);
      assert.match(await page.text(), /<form id="login"/);
      const js = await api.req('GET', '/ui/app.js', { headers: { authorization: '' } });
      assert.is(js.status, 200);
      assert.match(js.headers.get('content-type') ?? '', /^text\/javascript/);
      assert.ok((await js.text()).length > 20_000, 'uPlot is bundled into app.js');
      const css = await api.req('GET', '/ui/app.css', { headers: { authorization: '' } });
      assert.match(await css.text(), /\.uplot/);
      const etag = css.headers.get('etag') ?? '';
      const again = await api.req('GET', '/ui/app.css', { headers: { authorization: '', 'if-none-match': etag } });
      assert.is(again.status, 304);
      const redirect = await api.req('GET', '/ui', { headers: { authorization: '' } });
      assert.is(redirect.status, 301);
      assert.is(redirect.headers.get('location'), '/ui/');
      const missing = await api.req('GET', '/ui/secrets.json', { headers: { authorization: '' } });
      assert.is(missing.status, 404);
      // The error format of every path, never the path echoed back as text.
      assert.match(missing.headers.get('content-type') ?? '', /^application\/json/);
      assert.match(await missing.text(), /"error-info":"missing"/);
      assert.is((await api.req('GET', '/ui/../v1/config', { headers: { authorization: '' } })).status, 401);
      const hist = await api.req('GET', '/v1/state/volga/webhooks/x/history', { headers: { authorization: '' } });
      assert.is(hist.status, 401);
    } finally {
      await api.close();
    }
  });

  t('history: one sample per interval, at most the window, errors once each', async () => {
    const api = await startApi(backend);
    try {
      const store = api.instance.deps.store;
      let now = Date.parse('2026-01-01T00:00:00Z');
      const h = new DeliveredHistory(store, 'local', undefined, 5000, 15_000, () => now);
      assert.is(h.points, 3);
      const put = (delivered: number, error?: string, errorTime?: string) =>
        store.kvSet(
          webhookStateKey('default', 'hx', 'local'),
          JSON.stringify({
            status: 'ready',
            delivered,
            ...(error ? { 'last-error': error, 'last-error-time': errorTime } : {}),
          }),
        );
      for (const [i, d] of [0, 4, 9, 15].entries()) {
        await put(d, i >= 2 ? 'HTTP 503 from http://sink/' : undefined, '2026-01-01T00:00:09Z');
        await h.sample();
        now += 5000;
      }
      const got = h.of('default', 'hx') as {
        'interval-seconds': number;
        samples: Array<{ time: string; delivered: number }>;
        errors: Array<{ time: string; error: string }>;
      };
      assert.is(got['interval-seconds'], 5);
      assert.equal(
        got.samples.map((s) => s.delivered),
        [4, 9, 15],
      );
      assert.is(got.samples[2]?.time, '2026-01-01T00:00:15.000Z');
      assert.equal(got.errors, [{ time: '2026-01-01T00:00:09.000Z', error: 'HTTP 503 from http://sink/' }]);
      assert.equal((h.of('default', 'other') as { samples: unknown[] }).samples, []);
      await store.kvDel(webhookStateKey('default', 'hx', 'local'));
      await h.sample();
      assert.equal((h.of('default', 'hx') as { samples: unknown[] }).samples, [], 'a removed exporter is forgotten');
    } finally {
      await api.close();
    }
  });

  t('history: from the runtime when the process has one (no key listing); a slow listing is paced', async () => {
    const api = await startApi(backend);
    try {
      const real = api.instance.deps.store;
      let now = Date.parse('2026-01-01T00:00:00Z');
      let listings = 0;
      let listingTakesMs = 0;
      // The store as is, but a listing of kv keys is counted and takes listingTakesMs on the fake clock.
      const store = new Proxy(real, {
        get(target, prop, receiver) {
          if (prop === 'kvKeys')
            return async (prefix: string) => {
              listings++;
              now += listingTakesMs;
              return target.kvKeys(prefix);
            };
          const v: unknown = Reflect.get(target, prop, receiver);
          return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
        },
      });
      let delivered = 3;
      const runtime = {
        exporterState: () => undefined,
        exporterStates: () => [{ tenant: 'default', name: 'live', state: { status: 'ready', delivered } }],
        restart: async () => false,
      };
      const withRuntime = new DeliveredHistory(store, 'local', runtime, 5000, 60_000, () => now);
      for (let i = 0; i < 3; i++, now += 5000, delivered += 2) await withRuntime.sample();
      assert.is(listings, 0, 'no key listing when the runtime has the states');
      assert.equal(
        (withRuntime.of('default', 'live') as { samples: Array<{ delivered: number }> }).samples.map(
          (s) => s.delivered,
        ),
        [3, 5, 7],
      );

      // Without a runtime: a listing of 1 s (over a tenth of the 5 s interval) is made again 10 s later.
      const key = webhookStateKey('default', 'stored', 'local');
      await real.kvSet(key, JSON.stringify({ delivered: 1 }));
      const stored = new DeliveredHistory(store, 'local', undefined, 5000, 60_000, () => now);
      listingTakesMs = 1000;
      const samples = () =>
        (stored.of('default', 'stored') as { samples: Array<{ delivered: number }> }).samples.map((s) => s.delivered);
      await stored.sample();
      assert.is(listings, 1);
      now += 5000;
      await real.kvSet(key, JSON.stringify({ delivered: 2 }));
      await stored.sample();
      assert.is(listings, 1, 'the known keys are read between listings');
      assert.equal(samples(), [1, 2]);
      now += 5000;
      await stored.sample();
      assert.is(listings, 2, 'listed again once ten times the listing has passed');
      // A quick listing is made at every sample again.
      listingTakesMs = 0;
      now += 15_000;
      await stored.sample();
      await stored.sample();
      assert.is(listings, 4);
      await real.kvDel(key);
    } finally {
      await api.close();
    }
  });

  t('history route: 404 for an unknown exporter, the samples of a known one, 405 for writes', async () => {
    const api = await startApi(backend);
    try {
      assert.is((await api.json('GET', '/v1/state/volga/webhooks/none/history')).status, 404);
      const created = await api.json('POST', '/v1/config/volga/webhooks', {
        body: {
          name: 'hr',
          topics: ['t'],
          'site-placement': { 'all-sites': true },
          url: 'http://127.0.0.1:9/x',
          data: '${MSG}',
        },
      });
      assert.is(created.status, 201);
      await api.instance.deps.store.kvSet(webhookStateKey('default', 'hr', 'local'), JSON.stringify({ delivered: 7 }));
      await api.instance.deps.history?.sample();
      const r = await api.json('GET', '/v1/state/volga/webhooks/hr/history');
      assert.is(r.status, 200);
      const body = r.body as { name: string; samples: Array<{ delivered: number }> };
      assert.is(body.name, 'hr');
      assert.is(body.samples.at(-1)?.delivered, 7);
      assert.is((await api.json('POST', '/v1/state/volga/webhooks/hr/history')).status, 405);
      assert.is((await api.json('GET', '/v1/state/volga/webhooks/hr/history?fields=name')).status, 400);
    } finally {
      await api.close();
    }
  });
  t.run();
}

forEachBackend(historySuite);

test('the page in chromium: login, live exporter numbers, plot, sites; screenshot', async () => {
  ensureCommand('chromium', 'chromium');
  const sink: WebhookServer = await startWebhookServer();
  const server: ApiProc = await spawnApiProc({
    REDIS_URL: await freshRedisDb(5),
    ADMIN_PASSWORD: 'ui-admin-password',
    DATA_DIR: mkdtempSync(join(tmpdir(), 'edgeplane-ui-data-')),
    API_PROC_RUNTIME: '1',
  });
  const profile = mkdtempSync(join(tmpdir(), 'edgeplane-ui-chromium-'));
  let browser: BrowserContext | undefined;
  try {
    const login = (await (
      await fetch(`${server.url}/v1/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username: 'admin', password: 'ui-admin-password' }),
      })
    ).json()) as { token: string };
    const call = (method: string, path: string, body?: unknown) =>
      fetch(`${server.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${login.token}`, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    const setup = await call('PATCH', '/v1/config', [
      {
        'x-path': '/v1/config/volga/webhooks/sensors-to-sink',
        topics: ['sensors'],
        'site-placement': { 'all-sites': true },
        'start-position': 'beginning',
        url: `${sink.url}/in`,
        data: '${MSG_PAYLOAD}',
      },
      {
        'x-path': '/v1/config/volga/webhooks/broken',
        topics: ['sensors'],
        'site-placement': { 'all-sites': true },
        'start-position': 'beginning',
        url: 'http://127.0.0.1:1/unreachable',
        data: '${MSG_PAYLOAD}',
      },
      {
        // Ready, with a long last error (each message ignored): its text wraps like a failing one's.
        'x-path': '/v1/config/volga/webhooks/ignoring-every-message-for-a-missing-variable',
        topics: ['sensors'],
        'site-placement': { 'all-sites': true },
        'start-position': 'beginning',
        url: `${sink.url}/ignored`,
        data: '${V}',
        variables: [{ name: 'V', 'value-from-message': { 'json-pointer': '/payload/not-in-any-message' } }],
      },
      { 'x-path': '/v1/config/sites/local', type: 'control-tower', labels: { env: 'lab' } },
    ]);
    assert.is(setup.status, 204, await setup.text());
    const produce = async (n: number) => {
      for (let i = 0; i < n; i++)
        assert.is((await call('POST', '/v1/state/volga/topics/sensors/produce', { payload: { i } })).status, 201);
    };
    // The server's history (a sample every 5 s) holds the first deliveries before the page opens.
    const history = async () =>
      (
        (await (await call('GET', '/v1/state/volga/webhooks/sensors-to-sink/history')).json()) as {
          samples?: Array<{ delivered: number }>;
        }
      ).samples ?? [];
    await eventually(async () => (await history()).length > 0, 'a first history sample', 30_000);
    await produce(3);
    await sink.waitFor((r) => r.length >= 3, 'first deliveries');
    await eventually(async () => (await history()).some((p) => p.delivered === 3), 'history shows 3 delivered', 30_000);

    // A fresh profile directory (playwright passes it as --user-data-dir).
    browser = await chromium.launchPersistentContext(profile, {
      executablePath: '/usr/bin/chromium',
      viewport: { width: 1360, height: 900 },
      headless: true,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    const page = browser.pages()[0] ?? (await browser.newPage());
    const problems: string[] = [];
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(`console: ${m.text()}`);
    });
    await page.goto(`${server.url}/ui/`);
    await page.fill('input[name=password]', 'wrong-password');
    await page.click('button[type=submit]');
    await page.waitForFunction(() => (document.getElementById('login-error')?.textContent ?? '').length > 0);
    // The error's message and its code (error-info, a string).
    assert.match((await page.textContent('#login-error')) ?? '', /\[bad-credentials\]$/);
    problems.length = 0; // the refused login's 401 is expected
    await page.fill('input[name=password]', 'ui-admin-password');
    await page.click('button[type=submit]');
    const delivered = (text: string) =>
      page.waitForFunction(
        (want) => document.querySelector('tr[data-exporter="sensors-to-sink"] td.delivered')?.textContent === want,
        text,
        { timeout: 30_000 },
      );
    await delivered('3');
    // A freshly opened page plots the server's history: the 3 deliveries above are a rate > 0.
    await page.waitForFunction(() => Number(document.getElementById('plot')?.dataset.maxRate) > 0);
    // Messages produced now show up on the open page.
    await produce(4);
    await sink.waitFor((r) => r.length >= 7, 'more deliveries');
    await delivered('7');
    assert.ok(await page.isHidden('#login'), 'the login form is gone once logged in');
    const row = await page.textContent('tr[data-exporter="sensors-to-sink"]');
    assert.match(row ?? '', /ready/);
    assert.is(await page.textContent('tr[data-exporter="sensors-to-sink"] td.lag'), '0');
    assert.ok(await page.isVisible('#plot canvas'), 'the throughput plot is drawn');
    // The plot's highest point: the deliveries above, as a rate over 5 s buckets.
    await page.waitForFunction(() => Number(document.getElementById('plot')?.dataset.maxRate) > 0);
    assert.match((await page.textContent('#plot')) ?? '', /sensors-to-sink/);
    assert.match((await page.textContent('#sites')) ?? '', /local\s*control-tower/);
    // The unreachable webhook's error is listed among the recent errors.
    await page.waitForFunction(
      () => (document.getElementById('errors')?.textContent ?? '').includes('broken: '),
      null,
      {
        timeout: 30_000,
      },
    );
    assert.match((await page.textContent('tr[data-exporter="broken"] td.error-text')) ?? '', /\S/);
    const shots = mkdtempSync(join(tmpdir(), 'edgeplane-ui-shot-'));
    const shot = join(shots, 'status-page.png');
    // No text stretches the page past the screen: long errors wrap, wide tables scroll in their card.
    const widths = () =>
      page.evaluate(() => ({
        page: document.documentElement.scrollWidth,
        screen: document.documentElement.clientWidth,
      }));
    let w = await widths();
    assert.ok(w.page <= w.screen, `page ${w.page} px wide on a ${w.screen} px screen`);
    await page.screenshot({ path: shot, fullPage: true });
    assert.ok(statSync(shot).size > 10_000);
    process.stdout.write(`status page screenshot: ${shot}\n`);
    // A phone: the header wraps (Log out stays on screen), the cards stack, the table scrolls inside its card.
    await page.setViewportSize({ width: 375, height: 812 });
    await page.waitForTimeout(300);
    w = await widths();
    assert.ok(w.page <= w.screen, `page ${w.page} px wide on a ${w.screen} px phone`);
    const logout = await page.locator('#logout').boundingBox();
    assert.ok(logout && logout.x + logout.width <= 375, `Log out within the screen: ${JSON.stringify(logout)}`);
    const phone = join(shots, 'status-page-phone.png');
    await page.screenshot({ path: phone, fullPage: true });
    process.stdout.write(`status page screenshot (phone): ${phone}\n`);
    assert.equal(problems, []);
  } finally {
    await browser?.close();
    await server.stop();
    await sink.close();
  }
});

test.run();
