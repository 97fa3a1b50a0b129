/**
 * End to end through the API with the exporter runtime on, on both stores: a webhook
 * created over HTTP delivers a message produced over HTTP, and reports it in its state; a
 * subtenant's webhook reads a secret from a vault its parent shares (from-tenant) and is
 * refused one the parent does not share.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { startApi, type TestApi } from '../helpers/api.js';
import { startWebhookServer, type WebhookServer } from '../helpers/webhook-server.js';
import { tenantBus } from '../../src/bus/tenant-topics.js';
import { forEachBackend, type Backend } from '../helpers/backends.js';
import { eventually } from '../helpers/wait.js';

type Errors = { errors: Array<{ 'error-info'?: string; 'error-details'?: unknown }> };

function e2e(backend: Backend): void {
  const t = suite(`API + exporter end to end (${backend})`);
  let api: TestApi;
  let sink: WebhookServer;
  t.before(async () => {
    sink = await startWebhookServer();
    api = await startApi(backend, { runtime: true });
  });
  t.after(async () => {
    await api.close();
    await sink.close();
  });
  /** The subtenant acme's own topics (a subtenant's topic T is its stream volga:acme/T). */
  const acmeBus = () => tenantBus(api.instance.deps.bus, 'acme', api.settings.tenant);

  const state = async (name: string) =>
    (await api.json('GET', `/v1/state/volga/webhooks/${name}`)).body as {
      status?: string;
      delivered?: number;
      'last-error'?: string;
    };

  t('a webhook created over HTTP delivers a message produced over HTTP', async () => {
    const created = await api.json('POST', '/v1/config/volga/webhooks', {
      body: {
        name: 'h1',
        topics: ['e2e'],
        'site-placement': { 'all-sites': true },
        'start-position': 'beginning',
        url: `${sink.url}/in/\${TOPIC}`,
        'data-format': 'json',
        data: '{"t": ${TEMP}, "site": "${SYS_SITE}"}',
        variables: [{ name: 'TEMP', 'value-from-message': { 'json-pointer': '/payload/temp' } }],
      },
    });
    assert.is(created.status, 201, JSON.stringify(created.body));
    await eventually(async () => (await state('h1')).status === 'ready', 'exporter ready');
    const produced = await api.json('POST', '/v1/state/volga/topics/e2e/produce', { body: { payload: { temp: 21 } } });
    assert.is(produced.status, 201);
    await sink.waitFor((reqs) => reqs.some((r) => r.path === '/in/e2e'), 'delivery');
    const got = sink.requests.find((r) => r.path === '/in/e2e');
    assert.equal(JSON.parse(got?.body ?? 'null'), { t: 21, site: 'local' });
    assert.is(got?.headers['content-type'], 'application/json');
    await eventually(async () => (await state('h1')).delivered === 1, 'delivered counter');
  });

  t('restart and rewind of an exporter placed on other sites: 404 not-running, its state untouched', async () => {
    const created = await api.json('POST', '/v1/config/volga/webhooks', {
      body: {
        name: 'elsewhere',
        topics: ['te'],
        'site-placement': { sites: ['another-site'] },
        url: `${sink.url}/else`,
        data: 'x',
      },
    });
    assert.is(created.status, 201, JSON.stringify(created.body));
    await eventually(
      () => api.instance.runtime?.exporterState('default', 'elsewhere')?.status === 'stopped',
      'stopped here',
    );
    const before = api.instance.runtime?.exporterState('default', 'elsewhere')?.['start-time'];
    for (let i = 0; i < 2; i++) {
      const r = await api.json('POST', '/v1/state/volga/webhooks/elsewhere/restart');
      assert.is(r.status, 404, JSON.stringify(r.body));
      assert.is((r.body as Errors).errors[0]?.['error-info'], 'not-running');
    }
    assert.is(api.instance.runtime?.exporterState('default', 'elsewhere')?.['start-time'], before, 'not restarted');
    // Rewind alike: nothing moved, and no group made on this site's bus.
    const rw = await api.json('POST', '/v1/state/volga/webhooks/elsewhere/rewind', { body: { to: 'beginning' } });
    assert.is(rw.status, 404, JSON.stringify(rw.body));
    assert.is((rw.body as Errors).errors[0]?.['error-info'], 'not-running');
    assert.equal(await api.instance.deps.bus.groupConsumers('te', 'edgeplane:default:elsewhere'), []);
    assert.is((await api.instance.deps.bus.topicInfo('te')) ?? undefined, undefined, 'no stream made for it');
  });

  t('produce: every payload reads back as the JSON value sent (a string "42" stays a string)', async () => {
    const created = await api.json('POST', '/v1/config/volga/webhooks', {
      body: {
        name: 'types',
        topics: ['types-t'],
        'site-placement': { 'all-sites': true },
        'start-position': 'beginning',
        url: `${sink.url}/types`,
        'data-format': 'json',
        data: '${MSG}',
      },
    });
    assert.is(created.status, 201, JSON.stringify(created.body));
    const payloads = ['42', 'true', 'null', '{"a":1}', '"q"', ' 7', 'plain text', 42, { a: [1, '2'] }, ['x'], false];
    for (const payload of payloads)
      assert.is((await api.json('POST', '/v1/state/volga/topics/types-t/produce', { body: { payload } })).status, 201);
    const got = () => sink.requests.filter((r) => r.path === '/types');
    await sink.waitFor(() => got().length === payloads.length, 'every payload delivered');
    assert.equal(
      got().map((r) => (JSON.parse(r.body) as { payload: unknown }).payload),
      payloads,
    );
  });

  t('state = the configuration as configured + runtime fields; content splits them; where agrees', async () => {
    const cfg = {
      name: 'st1',
      topics: ['st-t1'],
      'site-placement': { 'all-sites': true },
      url: `${sink.url}/st1`,
      data: '${MSG_PAYLOAD}',
    };
    assert.is((await api.json('POST', '/v1/config/volga/webhooks', { body: cfg })).status, 201);
    const pat = { ...cfg, name: 'st2', topics: undefined, 'topic-patterns': ['^st-p'] };
    assert.is((await api.json('POST', '/v1/config/volga/webhooks', { body: pat })).status, 201);
    await eventually(async () => (await state('st1')).status === 'ready', 'st1 ready');
    const all = (await api.json('GET', '/v1/state/volga/webhooks/st1')).body as Record<string, unknown>;
    assert.equal(all.topics, ['st-t1'], 'topics as configured');
    assert.equal(all['topic-lag'], [{ topic: 'st-t1', lag: 0 }]);
    const config = (await api.json('GET', '/v1/config/volga/webhooks/st1')).body as Record<string, unknown>;
    const onlyConfig = (await api.json('GET', '/v1/state/volga/webhooks/st1?content=config')).body;
    assert.equal(onlyConfig, config);
    const nonconfig = (await api.json('GET', '/v1/state/volga/webhooks/st1?content=nonconfig')).body as Record<
      string,
      unknown
    >;
    for (const k of Object.keys(config)) if (k !== 'name') assert.not.ok(k in nonconfig, `${k} is configuration`);
    for (const k of ['status', 'delivered', 'in-flight', 'topic-lag']) assert.ok(k in nonconfig, k);
    const patterns = (await api.json('GET', '/v1/state/volga/webhooks/st2')).body as Record<string, unknown>;
    assert.not.ok('topics' in patterns, 'a patterns-only exporter has no topics');
    const names = async (path: string) =>
      (
        (await api.json('GET', `${path}?where=${encodeURIComponent("topics = 'st-t1'")}`)).body as Array<{
          name: string;
        }>
      )
        .map((o) => o.name)
        .sort();
    assert.equal(await names('/v1/state/volga/webhooks'), await names('/v1/config/volga/webhooks'));
    assert.equal(await names('/v1/state/volga/webhooks'), ['st1']);
  });

  t('a failing head message: retrying with last-error and the real backlog; ready and lag 0 after', async () => {
    sink.script((_n, req) => (req.path === '/rt' ? { status: 500, body: 'down for maintenance' } : {}));
    const created = await api.json('POST', '/v1/config/volga/webhooks', {
      body: {
        name: 'rt',
        topics: ['rt-t'],
        'site-placement': { 'all-sites': true },
        url: `${sink.url}/rt`,
        data: '${MSG_PAYLOAD}',
        'retry-interval': '20ms',
        'max-retry-interval': '50ms',
      },
    });
    assert.is(created.status, 201);
    await eventually(async () => (await state('rt')).status === 'ready', 'rt ready');
    for (let i = 0; i < 5; i++) await api.json('POST', '/v1/state/volga/topics/rt-t/produce', { body: { payload: i } });
    const lagOf = (s: Record<string, unknown>) => (s['topic-lag'] as Array<{ lag: number }>)[0]?.lag;
    const failing = await eventually(async () => {
      const s = (await state('rt')) as Record<string, unknown>;
      return s.status === 'retrying' && lagOf(s) === 5 ? s : undefined;
    }, 'retrying with a backlog of 5');
    assert.match(String(failing['last-error']), /HTTP 500/);
    sink.script([]);
    const after = await eventually(async () => {
      const s = (await state('rt')) as Record<string, unknown>;
      return s.delivered === 5 && lagOf(s) === 0 ? s : undefined;
    }, 'all delivered and lag 0');
    assert.is(after.status, 'ready');
  });

  t('a subtenant webhook reads a secret its parent shares, and only that', async () => {
    const setup = await api.json('PATCH', '/v1/config', {
      body: [
        { 'x-path': '/v1/config/strongbox/vaults/shared' },
        { 'x-path': '/v1/config/strongbox/vaults/shared/secrets/s', data: { token: 'shared-secret-value' } },
        { 'x-path': '/v1/config/strongbox/vaults/private' },
        { 'x-path': '/v1/config/strongbox/vaults/private/secrets/p', data: { token: 'private-secret-value' } },
        { 'x-path': '/v1/config/system/tenants/acme', 'shared-vaults': ['shared'] },
      ],
    });
    assert.is(setup.status, 204, JSON.stringify(setup.body));
    const hook = (vault: string, secret: string) => ({
      'x-path': '/v1/config/volga/webhooks/acme-hook',
      'x-tenant': 'acme',
      topics: ['acme-t'],
      'start-position': 'beginning',
      'site-placement': { 'all-sites': true },
      url: `${sink.url}/acme`,
      data: '${MSG_PAYLOAD}',
      headers: [{ name: 'authorization', value: 'Bearer ${TOKEN}' }],
      variables: [
        { name: 'TOKEN', 'value-from-vault-secret': { 'from-tenant': 'default', vault, secret, key: 'token' } },
      ],
    });
    const refused = await api.json('PATCH', '/v1/config', { body: [hook('private', 'p')] });
    assert.is(refused.status, 403, JSON.stringify(refused.body));
    assert.is((refused.body as Errors).errors[0]?.['error-info'], 'vault-not-shared');

    const ok = await api.json('PATCH', '/v1/config', { body: [hook('shared', 's')] });
    assert.is(ok.status, 204, JSON.stringify(ok.body));
    await acmeBus().produce('acme-t', { payload: 'hello' }); // acme's topic (stream volga:acme/acme-t)
    await sink.waitFor((reqs) => reqs.some((r) => r.path === '/acme'), 'subtenant delivery');
    const got = sink.requests.find((r) => r.path === '/acme');
    assert.is(got?.headers.authorization, 'Bearer shared-secret-value');
    assert.is(got?.body, 'hello');
  });

  t('a subtenant cannot subscribe to system: topics, by name or by pattern', async () => {
    const named = await api.json('PATCH', '/v1/config', {
      body: [
        {
          'x-path': '/v1/config/volga/webhooks/spy',
          'x-tenant': 'acme',
          topics: ['system:audit-trail-log'],
          'site-placement': { 'all-sites': true },
          url: `${sink.url}/spy`,
          data: '${MSG}',
        },
      ],
    });
    assert.is(named.status, 403, JSON.stringify(named.body));
    assert.is((named.body as Errors).errors[0]?.['error-info'], 'reserved-topic');
    // Nor write to one as its dead-letter topic.
    const dead = await api.json('PATCH', '/v1/config', {
      body: [
        {
          'x-path': '/v1/config/volga/webhooks/spy',
          'x-tenant': 'acme',
          topics: ['acme-t'],
          'dead-letter-topic': 'system:audit-trail-log',
          'site-placement': { 'all-sites': true },
          url: `${sink.url}/spy`,
          data: '${MSG}',
        },
      ],
    });
    assert.is(dead.status, 403, JSON.stringify(dead.body));
    assert.equal((dead.body as Errors).errors[0]?.['error-details'], {
      path: 'dead-letter-topic',
      'x-path': '/v1/config/volga/webhooks/spy',
    });
    assert.is((dead.body as Errors).errors[0]?.['error-info'], 'reserved-topic');
    const byPattern = await api.json('PATCH', '/v1/config', {
      body: [
        {
          'x-path': '/v1/config/volga/webhooks/spy',
          'x-tenant': 'acme',
          'topic-patterns': ['audit', '^acme-p'],
          'start-position': 'beginning',
          'site-placement': { 'all-sites': true },
          url: `${sink.url}/spy`,
          data: '${TOPIC}',
        },
      ],
    });
    assert.is(byPattern.status, 204, JSON.stringify(byPattern.body));
    await acmeBus().produce('acme-p1', { payload: 'x' });
    await sink.waitFor((reqs) => reqs.some((r) => r.path === '/spy'), 'pattern delivery');
    const st = await eventually(() => {
      const s = api.instance.runtime?.exporterState('acme', 'spy');
      return s?.['consumed-topics'] ? s : undefined;
    }, 'consumed topics');
    assert.equal(st['consumed-topics'], ['acme-p1']);
    assert.ok(
      sink.requests.filter((r) => r.path === '/spy').every((r) => r.body === 'acme-p1'),
      'nothing from system:audit-trail-log',
    );
  });

  t('when the parent stops sharing the vault, a restart of the exporter reports an error', async () => {
    const unshare = await api.json('PATCH', '/v1/config/system/tenants/acme', {
      raw: JSON.stringify([{ op: 'replace', path: '/shared-vaults', value: [] }]),
      type: 'application/json-patch+json',
    });
    assert.is(unshare.status, 204, JSON.stringify(unshare.body));
    const restarted = await api.instance.runtime?.restart('acme', 'acme-hook');
    assert.ok(restarted);
    const st = await eventually(() => {
      const s = api.instance.runtime?.exporterState('acme', 'acme-hook');
      return s?.status === 'error' ? s : undefined;
    }, 'error status');
    assert.match(String(st['last-error']), /not share|shared/);
    assert.not.match(String(st['last-error']), /shared-secret-value/);
  });

  t.run();
}

forEachBackend(e2e);
