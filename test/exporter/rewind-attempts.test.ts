/**
 * Rewind and the attempt log through the API with the exporter runtime on, on both stores
 * (the embedded bus and Redis streams), against a real HTTP receiver on port 0.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { startApi, type TestApi } from '../helpers/api.js';
import { startWebhookServer, type WebhookServer } from '../helpers/webhook-server.js';
import { openRedisStore } from '../../src/store/redis.js';
import { readAttempts } from '../../src/exporter/attempts.js';
import { forEachBackend, type Backend } from '../helpers/backends.js';
import { eventually } from '../helpers/wait.js';
import type { WireError } from '../helpers/assert.js';

type Errors = { errors: WireError[] };

function run(backend: Backend): void {
  const t = suite(`rewind and attempts (${backend})`);
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

  const state = async (name: string) =>
    (await api.json('GET', `/v1/state/volga/webhooks/${name}`)).body as Record<string, unknown>;
  const bodies = (name: string) =>
    sink
      .delivered()
      .filter((r) => r.path === `/${name}`)
      .map((r) => r.body);
  const produce = async (topic: string, payload: string) => {
    const r = await api.json('POST', `/v1/state/volga/topics/${topic}/produce`, { body: { payload } });
    assert.is(r.status, 201);
    return (r.body as { seqno: string }).seqno;
  };
  const create = async (name: string, topic: string, extra: Record<string, unknown> = {}) => {
    const r = await api.json('POST', '/v1/config/volga/webhooks', {
      body: {
        name,
        topics: [topic],
        'site-placement': { 'all-sites': true },
        'start-position': 'beginning',
        url: `${sink.url}/${name}`,
        data: '${MSG_PAYLOAD}',
        'retry-interval': '10ms',
        ...extra,
      },
    });
    assert.is(r.status, 201, JSON.stringify(r.body));
    await eventually(async () => (await state(name)).status === 'ready', `${name} ready`);
  };
  const rewind = (name: string, to: unknown) =>
    api.json('POST', `/v1/state/volga/webhooks/${name}/rewind`, { body: { to } });

  t('rewind to beginning, a seqno, a time and end moves the position on every topic', async () => {
    await create('rw', 'rw-topic');
    const ids = [];
    for (const p of ['m1', 'm2', 'm3']) ids.push(await produce('rw-topic', p));
    await sink.waitFor(() => bodies('rw').length === 3, 'three deliveries');

    assert.is((await rewind('rw', 'beginning')).status, 204);
    await sink.waitFor(() => bodies('rw').length === 6, 'all three again');
    assert.equal(bodies('rw').slice(3), ['m1', 'm2', 'm3']);

    assert.is((await rewind('rw', ids[1])).status, 204);
    await sink.waitFor(() => bodies('rw').length === 8, 'from m2 on');
    assert.equal(bodies('rw').slice(6), ['m2', 'm3']);

    const mtime3 = Number(ids[2]!.split('-')[0]);
    assert.is((await rewind('rw', new Date(mtime3).toISOString())).status, 204);
    await sink.waitFor(() => bodies('rw').length >= 9, 'from the time of m3 on');

    const before = bodies('rw').length;
    assert.is((await rewind('rw', 'end')).status, 204);
    await produce('rw-topic', 'm4');
    await sink.waitFor(() => bodies('rw').length === before + 1, 'only the new message');
    assert.equal(bodies('rw').slice(-1), ['m4']);
  });

  t('rewind: a bad "to" is a 400 naming it; an unknown exporter a 404; GET is 405', async () => {
    await create('rw2', 'rw2-topic');
    // A day past the month's end (Date.parse would roll it over to March 2), a seqno part above 2^64 - 1.
    for (const to of [
      'yesterday',
      '12-ab',
      '',
      5,
      null,
      '2026-02-30',
      '2026-02-30T10:00:00Z',
      '18446744073709551616-0',
    ]) {
      const r = await rewind('rw2', to);
      assert.is(r.status, 400, String(to));
      assert.is((r.body as Errors).errors[0]!['error-details']?.path, 'to');
    }
    assert.is((await rewind('rw2', '2024-02-29T10:00:00+02:00')).status, 204, 'a leap day is a day');
    const extra = await api.json('POST', '/v1/state/volga/webhooks/rw2/rewind', { body: { to: 'end', at: 1 } });
    assert.is(extra.status, 400);
    assert.is((await rewind('nope', 'end')).status, 404);
    assert.is((await api.json('GET', '/v1/state/volga/webhooks/rw2/rewind')).status, 405);
  });

  t('attempts: the last 100, newest first, with status or error and the head of a failing body', async () => {
    let failed = 0;
    let zs = 0;
    sink.script((_n, req) => (req.path === '/at' && req.body === 'x1' && ++failed === 1 ? { status: 502 } : {}));
    await create('at', 'at-topic');
    await produce('at-topic', 'x1');
    for (let i = 0; i < 110; i++) await produce('at-topic', `y${i}`);
    const list = await eventually(async () => {
      const r = await api.json('GET', '/v1/state/volga/webhooks/at/attempts');
      const l = r.body as Array<Record<string, unknown>>;
      return r.status === 200 && l.length === 100 && l[0]!.seqno !== undefined && bodies('at').length === 111
        ? l
        : undefined;
    }, '100 attempts');
    // Newest first: the last produced message leads; seqnos descend.
    const seqnos = list.map((a) => String(a.seqno));
    assert.equal(
      [...seqnos].sort((a, b) => (a < b ? 1 : -1)),
      seqnos,
    );
    const top = list[0]!;
    assert.equal(Object.keys(top).sort(), ['attempt', 'duration-ms', 'seqno', 'status', 'time', 'topic']);
    assert.is(top.status, 200);
    assert.is(top.topic, 'at-topic');
    assert.ok(typeof top['duration-ms'] === 'number');
    assert.ok(!Number.isNaN(Date.parse(String(top.time))));
    sink.script([]);

    // The failed attempt of x1 is older than the last 100, so a new failure is made to show it.
    sink.script((_n, req) => (req.path === '/at' && req.body === 'z' && ++zs === 1 ? { status: 503 } : {}));
    await produce('at-topic', 'z');
    const fail = await eventually(async () => {
      const l = (await api.json('GET', '/v1/state/volga/webhooks/at/attempts')).body as Array<Record<string, unknown>>;
      return l.find((a) => a.status === 503);
    }, 'the failed attempt');
    assert.is(fail.attempt, 1);
    assert.is(fail.body, 'ok');
    assert.match(String(fail.error), /503/);
    sink.script([]);
    if (backend === 'redis') {
      // Another process of the same site reads the same log from the store.
      const other = await openRedisStore(api.settings.redisUrl!);
      try {
        const l = await readAttempts(other, 'default', 'at');
        assert.ok(l.some((a) => a.status === 503));
      } finally {
        await other.close();
      }
    }
    assert.is((await api.json('GET', '/v1/state/volga/webhooks/none/attempts')).status, 404);
  });

  t('an exporter deleted and created again under its name starts a new attempt log', async () => {
    assert.is((await api.json('DELETE', '/v1/config/volga/webhooks/at')).status, 204);
    await eventually(
      async () => (await readAttempts(api.instance.deps.store, 'default', 'at')).length === 0,
      "the deleted exporter's log is removed",
    );
    await create('at', 'at-topic-2');
    const l = (await api.json('GET', '/v1/state/volga/webhooks/at/attempts')).body as unknown[];
    assert.equal(l, [], 'nothing of the old one');
  });

  t.run();
}

forEachBackend(run);
