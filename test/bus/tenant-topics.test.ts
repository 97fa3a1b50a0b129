/**
 * Topics are each tenant's own, both stores: the root tenant's topic T is stream `volga:T`,
 * subtenant S's is `volga:S/T`. Exporters (named topics and topic-patterns), produce, and the
 * topic listing of a tenant reach only its own topics; `system:` topics are the root's.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { createClient } from 'redis';
import { busTopic, streamKey, topicOfBus } from '../../src/bus/tenant-topics.js';
import { startApi, type TestApi } from '../helpers/api.js';
import { startWebhookServer, type WebhookServer } from '../helpers/webhook-server.js';
import { forEachBackend, type Backend } from '../helpers/backends.js';

const unit = suite('tenant-topics mapping');
unit('one mapping, both ways', () => {
  assert.is(streamKey('default', 't', 'default'), 'volga:t');
  assert.is(streamKey('acme', 't', 'default'), 'volga:acme/t');
  assert.is(streamKey('acme', 'system:audit-trail-log', 'default'), 'volga:system:audit-trail-log');
  for (const [tenant, topic] of [
    ['default', 't'],
    ['acme', 't'],
    ['beta', 'a.b:c'],
  ] as const)
    assert.equal(topicOfBus(busTopic(tenant, topic, 'default'), 'default'), { tenant, topic });
});
unit.run();

function tenantSuite(backend: Backend, db: number): void {
  const t = suite(`tenant-topics (${backend})`);
  let api: TestApi;
  let hook: WebhookServer;
  const as: Record<string, string> = {};

  const call = (who: string, method: string, path: string, body?: unknown) =>
    api.json(method, path, { ...(body !== undefined ? { body } : {}), headers: { authorization: as[who] as string } });

  t.before(async () => {
    api = await startApi(backend, { db, runtime: true });
    hook = await startWebhookServer();
    as.root = `Bearer ${api.token}`;
    for (const tenant of ['acme', 'beta']) {
      assert.is((await api.json('PUT', `/v1/config/system/tenants/${tenant}`, { body: { name: tenant } })).status, 201);
      const r = await api.json('PATCH', '/v1/config', {
        body: [
          {
            'x-path': '/v1/config/system/users/u',
            'x-tenant': tenant,
            'x-operation': 'create',
            password: `${tenant}-password-1`,
            policies: ['admin'],
          },
        ],
      });
      assert.is(r.status, 204, JSON.stringify(r.body));
      const login = await api.json('POST', '/v1/login', {
        body: { username: `u@${tenant}`, password: `${tenant}-password-1` },
        headers: { authorization: '' },
      });
      assert.is(login.status, 200);
      as[tenant] = `Bearer ${(login.body as { token: string }).token}`;
    }
  });
  t.after(async () => {
    await api.close();
    await hook.close();
  });

  t('produce, exporters, topic-patterns and listings stay within the tenant', async () => {
    for (const who of ['root', 'acme', 'beta']) {
      const r = await call(who, 'POST', '/v1/state/volga/topics/t/produce', { payload: `${who}-msg` });
      assert.is(r.status, 201, JSON.stringify(r.body));
    }
    assert.is(
      (await call('root', 'POST', '/v1/state/volga/topics/rootonly/produce', { payload: 'root-2' })).status,
      201,
    );
    assert.is(
      (await call('beta', 'POST', '/v1/state/volga/topics/betaonly/produce', { payload: 'beta-2' })).status,
      201,
    );

    const exporter = (who: string, name: string, topics: object) => ({
      name,
      ...topics,
      'site-placement': { 'all-sites': true },
      'start-position': 'beginning',
      url: `${hook.url}/${who}/${name}`,
      data: '${MSG_PAYLOAD}',
    });
    for (const who of ['root', 'acme', 'beta']) {
      const r = await call(who, 'POST', '/v1/config/volga/webhooks', exporter(who, 'h', { topics: ['t'] }));
      assert.is(r.status, 201, JSON.stringify(r.body));
    }
    const pat = await call(
      'acme',
      'POST',
      '/v1/config/volga/webhooks',
      exporter('acme', 'p', { 'topic-patterns': ['.*'] }),
    );
    assert.is(pat.status, 201, JSON.stringify(pat.body));

    const bodies = (path: string) =>
      hook
        .delivered()
        .filter((r) => r.path === path)
        .map((r) => r.body);
    await hook.waitFor(
      () => ['root', 'acme', 'beta'].every((w) => bodies(`/${w}/h`).length >= 1) && bodies('/acme/p').length >= 1,
      'each tenant got its own message',
      30_000,
    );
    for (const who of ['root', 'acme', 'beta']) assert.equal(bodies(`/${who}/h`), [`${who}-msg`], who);
    assert.equal(bodies('/acme/p'), ['acme-msg'], "the pattern exporter sees acme's topics only");

    const names = async (who: string) =>
      ((await call(who, 'GET', '/v1/state/volga/topics')).body as Array<{ name: string; length: number }>).map(
        (x) => `${x.name}:${x.length}`,
      );
    assert.equal(await names('acme'), ['t:1']);
    assert.equal(await names('beta'), ['betaonly:1', 't:1']);
    const rootNames = await names('root');
    assert.ok(rootNames.includes('t:1') && rootNames.includes('rootonly:1'), rootNames.join(' '));
    assert.ok(
      rootNames.some((n) => n.startsWith('system:audit-trail-log:')),
      'the audit trail is a root topic',
    );
    assert.not.ok(
      rootNames.some((n) => n.includes('/')),
      'no other tenant topic in the root listing',
    );
    const one = await call('acme', 'GET', '/v1/state/volga/topics/t');
    assert.is((one.body as { name: string }).name, 't');
    assert.is((await call('acme', 'GET', '/v1/state/volga/topics/rootonly')).status, 404);
    const whole = await call('acme', 'GET', '/v1/state?match-path=/v1/state/volga/topics/*');
    assert.equal(
      (whole.body as Array<{ 'x-path': string }>).map((o) => o['x-path']),
      ['/v1/state/volga/topics/t'],
    );
  });

  t('system: topics are the root tenant’s: a subtenant can neither see nor produce to them', async () => {
    assert.is((await call('acme', 'GET', '/v1/state/volga/topics/system:audit-trail-log')).status, 404);
    const r = await call('acme', 'POST', '/v1/state/volga/topics/system:audit-trail-log/produce', { payload: 'x' });
    assert.is(r.status, 403);
    assert.match(JSON.stringify(r.body), /"error-info":"reserved-topic"/);
    assert.is((await call('root', 'GET', '/v1/state/volga/topics/system:audit-trail-log')).status, 200);
  });

  t('the audit trail is the server’s alone: the root can neither produce to it nor dead-letter into it', async () => {
    const r = await call('root', 'POST', '/v1/state/volga/topics/system:audit-trail-log/produce', {
      payload: { user: 'alice', method: 'DELETE' },
      'producer-name': 'edgeplane-api',
    });
    assert.is(r.status, 403);
    assert.match(JSON.stringify(r.body), /"error-info":"reserved-topic"/);
    const hook = await call('root', 'PUT', '/v1/config/volga/webhooks/forger', {
      topics: ['t'],
      'dead-letter-topic': 'system:audit-trail-log',
      'site-placement': { 'all-sites': true },
      url: 'http://127.0.0.1:9/x',
      data: 'x',
    });
    assert.is(hook.status, 403, JSON.stringify(hook.body));
    assert.match(JSON.stringify(hook.body), /"error-info":"reserved-topic"/);
  });

  if (backend === 'redis')
    t('on Redis: volga:T for the root, volga:S/T for a subtenant, groups on its own stream', async () => {
      const c = createClient({ url: api.settings.redisUrl as string });
      await c.connect();
      try {
        assert.is(await c.xLen('volga:t'), 1);
        assert.is(await c.xLen('volga:acme/t'), 1);
        assert.is(await c.xLen('volga:beta/t'), 1);
        assert.is(await c.xLen('volga:beta/betaonly'), 1);
        const groups = (await c.xInfoGroups('volga:acme/t')).map((g) => g.name).sort();
        assert.equal(groups, ['edgeplane:acme:h', 'edgeplane:acme:p']);
      } finally {
        await c.quit();
      }
    });

  t.run();
}

forEachBackend((backend) => tenantSuite(backend, 10));
