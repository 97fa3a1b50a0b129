/**
 * GET /metrics: Prometheus text, names prefixed edgeplane_, no token unless METRICS_TOKEN is
 * set. Exporter counters, in-flight, topic lag and the delivery-latency histogram agree with
 * the exporter's state after real deliveries (runtime on, on both stores); API requests are
 * counted by route template (never the raw path), method and status class.
 */
import { suite, test } from 'uvu';
import * as assert from 'uvu/assert';
import { startApi } from '../helpers/api.js';
import { loadSettings } from '../../src/lib/settings.js';
import { startWebhookServer } from '../helpers/webhook-server.js';
import { forEachBackend, type Backend } from '../helpers/backends.js';
import { eventually } from '../helpers/wait.js';
import { ensurePromtool, promtoolCheck } from '../helpers/promtool.js';

// Installed (apt-get on a fresh machine) before any server or connection exists: the install
// blocks this process, and a kept-alive connection closed meanwhile would fail a request.
ensurePromtool();

type Sample = { name: string; labels: Record<string, string>; value: number };

/** Parses the text format strictly enough to catch a malformed line. */
function parse(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('# HELP ') || line.startsWith('# TYPE ')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (-?[0-9.e+-]+|NaN|[+-]Inf)$/.exec(line);
    assert.ok(m, `not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m![2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[l[1] as string] = l[2] as string;
    out.push({ name: m![1] as string, labels, value: Number(m![3]) });
  }
  return out;
}

const find = (samples: Sample[], name: string, labels: Record<string, string>) =>
  samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));

function exporters(backend: Backend): void {
  const t = suite(`metrics of exporters and API requests (${backend})`);
  t('after deliveries, the series agree with the exporter state', async () => {
    const sink = await startWebhookServer();
    const api = await startApi(backend, { runtime: true });
    try {
      const created = await api.json('POST', '/v1/config/volga/webhooks', {
        body: {
          name: 'm1',
          topics: ['metrics-t'],
          'site-placement': { 'all-sites': true },
          'start-position': 'beginning',
          url: `${sink.url}/in`,
          data: '${MSG}',
          'match-string': ['keep-me-xyz'],
        },
      });
      assert.is(created.status, 201, JSON.stringify(created.body));
      for (const keep of ['keep-me-xyz', 'keep-me-xyz', 'keep-me-xyz', 'skip-me'])
        assert.is(
          (await api.json('POST', '/v1/state/volga/topics/metrics-t/produce', { body: { payload: { keep } } })).status,
          201,
        );
      const state = async () => (await api.json('GET', '/v1/state/volga/webhooks/m1')).body as Record<string, unknown>;
      await eventually(async () => (await state()).delivered === 3 && (await state()).filtered === 1, 'deliveries');
      await api.json('GET', '/v1/config/volga/webhooks/m1');
      await api.json('GET', '/v1/config/no/such/path');
      await api.json('GET', '/nowhere');

      const res = await api.req('GET', '/metrics', { headers: { authorization: '' } });
      assert.is(res.status, 200);
      assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
      const text = await res.text();
      const samples = parse(text);
      // Prometheus' own checker (exit 3 before: prom-client's default gauges named `_total`).
      const check = promtoolCheck(text);
      assert.is(check.status, 0, check.output);
      assert.ok(
        samples.every((s) => s.name.startsWith('edgeplane_')),
        samples.find((s) => !s.name.startsWith('edgeplane_'))?.name,
      );
      const st = await state();
      const ex = { tenant: 'default', exporter: 'm1' };
      for (const [counter, metric] of [
        ['delivered', 'edgeplane_exporter_delivered_total'],
        ['dropped', 'edgeplane_exporter_dropped_total'],
        ['ignored', 'edgeplane_exporter_ignored_total'],
        ['filtered', 'edgeplane_exporter_filtered_total'],
        ['failed-attempts', 'edgeplane_exporter_failed_attempts_total'],
      ] as const) {
        const s = find(samples, metric, ex);
        assert.is(s.length, 1, metric);
        assert.is(s[0]!.value, st[counter], metric);
      }
      assert.is(find(samples, 'edgeplane_exporter_delivered_total', ex)[0]!.value, 3);
      assert.is(find(samples, 'edgeplane_exporter_in_flight', ex)[0]?.value, 0);
      assert.is(find(samples, 'edgeplane_exporter_topic_lag', { ...ex, topic: 'metrics-t' })[0]?.value, 0);
      assert.is(find(samples, 'edgeplane_exporter_status', { ...ex, status: 'ready' })[0]?.value, 1);
      assert.is(find(samples, 'edgeplane_exporter_delivery_duration_seconds_count', ex)[0]?.value, 3);
      assert.is(
        find(samples, 'edgeplane_exporter_delivery_duration_seconds_bucket', { ...ex, le: '+Inf' })[0]?.value,
        3,
      );

      // API requests: by route template, method and status class.
      const route = (r: string, method: string, code: string) =>
        find(samples, 'edgeplane_api_requests_total', { route: r, method, code })[0]?.value ?? 0;
      assert.is(route('/v1/config/volga/webhooks', 'POST', '2xx'), 1);
      assert.ok(route('/v1/state/volga/webhooks/{name}', 'GET', '2xx') >= 2);
      assert.is(route('/v1/config/volga/webhooks/{name}', 'GET', '2xx'), 1);
      assert.is(route('/v1/state/volga/topics/{topic}/produce', 'POST', '2xx'), 4);
      assert.is(route('/v1/config/*', 'GET', '4xx'), 1);
      assert.is(route('unmatched', 'GET', '4xx'), 1);
      assert.is(
        find(samples, 'edgeplane_api_request_duration_seconds_count', {
          route: '/v1/config/volga/webhooks',
          method: 'POST',
          code: '2xx',
        })[0]?.value,
        1,
      );
      // Never a raw path as a label.
      assert.not.ok(text.includes('webhooks/m1'));
      assert.not.ok(text.includes('/no/such/path'));
      assert.not.ok(text.includes('/nowhere'));
      // Process metrics come with the same prefix.
      assert.ok(find(samples, 'edgeplane_process_cpu_seconds_total', {}).length === 1);
      // A deleted exporter's series go, its latency histogram's too.
      assert.is((await api.json('DELETE', '/v1/config/volga/webhooks/m1')).status, 204);
      await eventually(
        async () =>
          !(await (await api.req('GET', '/metrics', { headers: { authorization: '' } })).text()).includes(
            'exporter="m1"',
          ),
        'no series of m1 once it is deleted',
      );
    } finally {
      await api.close();
      await sink.close();
    }
  });
  t.run();
}

forEachBackend(exporters);

test('METRICS_TOKEN: /metrics needs Bearer METRICS_TOKEN, and only it', async () => {
  const api = await startApi('embedded', { env: { METRICS_TOKEN: 'scrape-secret-1' } });
  try {
    const none = await api.json('GET', '/metrics', { headers: { authorization: '' } });
    assert.is(none.status, 401);
    assert.is(none.headers.get('www-authenticate'), 'Bearer realm="metrics"');
    assert.match(JSON.stringify(none.body), /METRICS_TOKEN/);
    assert.not.match(JSON.stringify(none.body), /scrape-secret-1/);
    // The admin's API token is not the metrics token.
    assert.is((await api.json('GET', '/metrics')).status, 401);
    assert.is(
      (await api.json('GET', '/metrics', { headers: { authorization: 'Bearer scrape-secret-2' } })).status,
      401,
    );
    const ok = await api.req('GET', '/metrics', { headers: { authorization: 'Bearer scrape-secret-1' } });
    assert.is(ok.status, 200);
    assert.match(await ok.text(), /^# HELP edgeplane_/m);
    assert.is((await api.json('POST', '/metrics', { headers: { authorization: '' } })).status, 405);
  } finally {
    await api.close();
  }
});

test('without METRICS_TOKEN: no token needed, and an API token is not required either', async () => {
  const api = await startApi('embedded');
  try {
    const res = await api.req('GET', '/metrics', { headers: { authorization: '' } });
    assert.is(res.status, 200);
    const text = await res.text();
    // No exporter runtime here: no exporter series, but the API series are there.
    assert.not.match(text, /^edgeplane_exporter_delivered_total\{/m);
    assert.match(text, /^edgeplane_api_requests_total\{route="\/v1\/login",method="POST",code="2xx"\} 1$/m);
  } finally {
    await api.close();
  }
});

test('METRICS_ENABLED=false: no /metrics route, the API answers as before, a bad value is refused', async () => {
  const api = await startApi('embedded', { env: { METRICS_ENABLED: 'false' } });
  try {
    const res = await api.json('GET', '/metrics');
    assert.is(res.status, 404);
    assert.match(JSON.stringify(res.body), /unknown-path/);
    assert.is((await api.json('PUT', '/v1/config/applications/m-off', { body: { version: '1' } })).status, 201);
    assert.is((await api.json('GET', '/v1/config/applications/m-off')).status, 200);
  } finally {
    await api.close();
  }
  assert.throws(() => loadSettings({ METRICS_ENABLED: 'off' }), /METRICS_ENABLED must be true or false/);
});

test.run();
