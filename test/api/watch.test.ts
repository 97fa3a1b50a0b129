/**
 * `?watch` over real HTTP, on both stores: the current objects, `synced`, then each change as
 * `event: change` (the object with x-path, or {x-path, x-operation: delete}); where and fields
 * on every event; a list, one object and the whole tree; state watches follow the exporter
 * runtime (a delivered message shows up as a change of the exporter's counters); keep-alive
 * comments; the read's authorization; one store subscription for many watchers.
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { serve, type ServerType } from '@hono/node-server';
import { Agent, EventSource } from 'undici';
import { startApi, type TestApi } from '../helpers/api.js';
import { startWebhookServer, type WebhookServer } from '../helpers/webhook-server.js';
import { readEvents, type SseEvent } from '../../src/cli/sse.js';
import { watchHub } from '../../src/api/watch.js';
import { forEachBackend, type Backend } from '../helpers/backends.js';
import { eventually } from '../helpers/wait.js';

type Obj = Record<string, unknown>;

/** A watch opened with fetch; events are collected as they come. */
type Watch = {
  status: number;
  events: SseEvent[];
  comments: () => number;
  next(pred: (e: SseEvent) => boolean, what: string): Promise<SseEvent>;
  close(): void;
};

function watchSuite(backend: Backend): void {
  const t = suite(`watch (${backend})`);
  let api: TestApi;
  let server: ServerType;
  let base = '';
  let sink: WebhookServer;
  const open: Watch[] = [];

  t.before(async () => {
    sink = await startWebhookServer();
    api = await startApi(backend, { runtime: true });
    await new Promise<void>((resolve) => {
      server = serve({ fetch: api.instance.app.fetch, port: 0, hostname: '127.0.0.1' }, (info) => {
        base = `http://127.0.0.1:${info.port}`;
        resolve();
      });
    });
  });
  t.after.each(() => {
    for (const w of open.splice(0)) w.close();
  });
  t.after(async () => {
    await api.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await sink.close();
  });

  const watch = async (path: string, token = api.token): Promise<Watch> => {
    const ctl = new AbortController();
    const res = await fetch(`${base}${path}`, {
      headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' },
      signal: ctl.signal,
    });
    const events: SseEvent[] = [];
    let comments = 0;
    const w: Watch = {
      status: res.status,
      events,
      comments: () => comments,
      async next(pred, what) {
        const end = await eventually(
          () => events.findIndex(pred) + 1 || undefined,
          () => `an event ${what}; got ${JSON.stringify(events)}`,
          { everyMs: 10 },
        );
        return events.splice(0, end)[end - 1] as SseEvent;
      },
      close: () => ctl.abort(),
    };
    open.push(w);
    if (res.status === 200 && res.body) {
      // Counts comment lines on a tee of the body: readEvents skips them.
      const [a, b] = res.body.tee();
      void (async () => {
        try {
          for await (const e of readEvents(a)) {
            events.push(e);
          }
        } catch {
          /* aborted */
        }
      })();
      void (async () => {
        const reader = b.getReader();
        const dec = new TextDecoder();
        try {
          for (;;) {
            const { done, value } = await reader.read();
            if (done) break;
            comments += (dec.decode(value).match(/^: keep-alive$/gm) ?? []).length;
          }
        } catch {
          /* aborted */
        }
      })();
    }
    return w;
  };
  const data = (e: SseEvent): Obj => JSON.parse(e.data) as Obj;
  const isChange =
    (xPath: string, pred: (d: Obj) => boolean = () => true) =>
    (e: SseEvent) =>
      e.event === 'change' && data(e)['x-path'] === xPath && pred(data(e));
  const synced = (e: SseEvent) => e.event === 'synced';

  const hook = (name: string, extra: Obj = {}) => ({
    name,
    topics: [`t-${name}`],
    'site-placement': { 'all-sites': true },
    'start-position': 'beginning',
    url: `${sink.url}/${name}`,
    data: '${MSG_PAYLOAD}',
    ...extra,
  });

  t('a list: current objects, synced, then create, update and delete as changes', async () => {
    assert.is((await api.json('POST', '/v1/config/applications', { body: { name: 'a1', version: '1' } })).status, 201);
    const w = await watch('/v1/config/applications?watch');
    assert.is(w.status, 200);
    const first = await w.next(isChange('/v1/config/applications/a1'), 'a1 initial');
    assert.equal(data(first), { 'x-path': '/v1/config/applications/a1', name: 'a1', version: '1' });
    assert.equal(data(await w.next(synced, 'synced')), { count: 1 });
    await api.json('POST', '/v1/config/applications', { body: { name: 'a2', version: '1' } });
    assert.equal(data(await w.next(isChange('/v1/config/applications/a2'), 'a2 created')), {
      'x-path': '/v1/config/applications/a2',
      name: 'a2',
      version: '1',
    });
    await api.json('PATCH', '/v1/config/applications/a1', { body: { version: '2' } });
    const upd = await w.next(isChange('/v1/config/applications/a1'), 'a1 updated');
    assert.is(data(upd).version, '2');
    await api.req('DELETE', '/v1/config/applications/a2');
    assert.equal(data(await w.next(isChange('/v1/config/applications/a2'), 'a2 deleted')), {
      'x-path': '/v1/config/applications/a2',
      'x-operation': 'delete',
    });
    await api.req('DELETE', '/v1/config/applications/a1');
  });

  t('where and fields apply to every event; leaving where is a delete', async () => {
    await api.json('POST', '/v1/config/applications', { body: { name: 'w1', version: 'keep' } });
    await api.json('POST', '/v1/config/applications', { body: { name: 'w2', version: 'other' } });
    const where = encodeURIComponent('version = "keep"');
    const w = await watch(`/v1/config/applications?watch&where=${where}&fields=name`);
    assert.equal(data(await w.next(isChange('/v1/config/applications/w1'), 'w1')), {
      'x-path': '/v1/config/applications/w1',
      name: 'w1',
    });
    assert.equal(data(await w.next(synced, 'synced')), { count: 1 });
    await api.json('PATCH', '/v1/config/applications/w2', { body: { version: 'keep' } });
    assert.equal(data(await w.next(isChange('/v1/config/applications/w2'), 'w2 enters')), {
      'x-path': '/v1/config/applications/w2',
      name: 'w2',
    });
    await api.json('PATCH', '/v1/config/applications/w1', { body: { version: 'gone' } });
    assert.equal(data(await w.next(isChange('/v1/config/applications/w1'), 'w1 leaves')), {
      'x-path': '/v1/config/applications/w1',
      'x-operation': 'delete',
    });
    // A change outside the selection sends nothing; the next one inside does.
    await api.json('PATCH', '/v1/config/applications/w1', { body: { version: 'still-gone' } });
    await api.json('PATCH', '/v1/config/applications/w2', { body: { services: [] } });
    await api.json('POST', '/v1/config/applications', { body: { name: 'w3', version: 'keep' } });
    await w.next(isChange('/v1/config/applications/w3'), 'w3');
    assert.is(
      w.events.some((e) => e.event === 'change' && data(e)['x-path'] === '/v1/config/applications/w1'),
      false,
    );
    for (const n of ['w1', 'w2', 'w3']) await api.req('DELETE', `/v1/config/applications/${n}`);
  });

  t('one object, also before it exists; the whole tree with x-path', async () => {
    const one = await watch('/v1/config/sites/s1?watch');
    assert.equal(data(await one.next(synced, 'synced')), { count: 0 });
    const all = await watch('/v1/config?watch');
    await all.next(synced, 'synced (tree)');
    await api.json('POST', '/v1/config/sites', { body: { name: 's1', type: 'edge', labels: { zone: 'a' } } });
    const created = data(await one.next(isChange('/v1/config/sites/s1'), 's1 created'));
    assert.is(created.name, 's1');
    assert.equal(created.labels, { zone: 'a' });
    assert.is(data(await all.next(isChange('/v1/config/sites/s1'), 's1 in tree')).type, 'edge');
    await api.req('DELETE', '/v1/config/sites/s1');
    assert.is(data(await one.next(isChange('/v1/config/sites/s1'), 's1 deleted'))['x-operation'], 'delete');
    assert.is(data(await all.next(isChange('/v1/config/sites/s1'), 's1 deleted (tree)'))['x-operation'], 'delete');
  });

  t('secrets stay redacted in watch events', async () => {
    await api.json('PATCH', '/v1/config', {
      body: [
        { 'x-path': '/v1/config/strongbox/vaults/v' },
        { 'x-path': '/v1/config/strongbox/vaults/v/secrets/s', data: { k: 'watch-secret-value' } },
      ],
    });
    const w = await watch('/v1/config/strongbox/vaults/v/secrets?watch');
    await w.next(synced, 'synced');
    await api.json('PATCH', '/v1/config/strongbox/vaults/v/secrets/s', { body: { data: { k: 'watch-secret-2' } } });
    await api.json('POST', '/v1/config/applications', { body: { name: 'after-secret', version: '1' } });
    await api.req('DELETE', '/v1/config/applications/after-secret');
    await new Promise((r) => setTimeout(r, 300));
    assert.not.ok(
      w.events.some((e) => e.data.includes('watch-secret')),
      JSON.stringify(w.events),
    );
  });

  t('state: a delivered message shows up as a change of the exporter counters', async () => {
    assert.is((await api.json('POST', '/v1/config/volga/webhooks', { body: hook('sw') })).status, 201);
    const w = await watch('/v1/state/volga/webhooks?watch&fields=name,status,delivered');
    await w.next(synced, 'synced');
    await w.next(
      isChange('/v1/state/volga/webhooks/sw', (d) => d.status === 'ready'),
      'ready',
    );
    assert.is(
      (await api.json('POST', '/v1/state/volga/topics/t-sw/produce', { body: { payload: { n: 1 } } })).status,
      201,
    );
    const ev = data(
      await w.next(
        isChange('/v1/state/volga/webhooks/sw', (d) => d.delivered === 1),
        'delivered 1',
      ),
    );
    assert.equal(Object.keys(ev).sort(), ['delivered', 'name', 'status', 'x-path']);
    const one = await watch('/v1/state/volga/webhooks/sw?watch');
    const cur = data(await one.next(isChange('/v1/state/volga/webhooks/sw'), 'one: current'));
    assert.is(cur.delivered, 1);
    await api.req('DELETE', '/v1/config/volga/webhooks/sw');
    await one.next(
      isChange('/v1/state/volga/webhooks/sw', (d) => d['x-operation'] === 'delete'),
      'one: deleted',
    );
  });

  t('undici EventSource receives the same events (standard client)', async () => {
    const token = api.token;
    const dispatcher = new Agent().compose(
      (dispatch) => (opts, handler) =>
        dispatch(
          { ...opts, headers: { ...(opts.headers as Record<string, string>), authorization: `Bearer ${token}` } },
          handler,
        ),
    );
    const es = new EventSource(`${base}/v1/config/applications?watch`, { dispatcher });
    const got: string[] = [];
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`EventSource: ${got.join(' | ')}`)), 15_000);
        es.addEventListener('synced', () => {
          void api.json('POST', '/v1/config/applications', { body: { name: 'es1', version: '1' } });
        });
        es.addEventListener('change', (e) => {
          got.push(String((e as MessageEvent).data));
          if (String((e as MessageEvent).data).includes('es1')) {
            clearTimeout(timer);
            resolve();
          }
        });
        es.onerror = () => got.push('error');
      });
    } finally {
      es.close();
      await dispatcher.close();
    }
    assert.equal(JSON.parse(got.at(-1) ?? '{}'), {
      'x-path': '/v1/config/applications/es1',
      name: 'es1',
      version: '1',
    });
    await api.req('DELETE', '/v1/config/applications/es1');
  });

  t('keep-alive comments on an idle stream', async () => {
    const hub = watchHub(api.instance.deps);
    const before = hub.keepAliveMs;
    hub.keepAliveMs = 50;
    try {
      const w = await watch('/v1/config/sites?watch');
      await w.next(synced, 'synced');
      await eventually(
        () => w.comments() >= 2,
        () => `two keep-alives (got ${w.comments()})`,
        10_000,
      );
    } finally {
      hub.keepAliveMs = before;
    }
  });

  /** A user of its own policy reading everything; its token. */
  const reader = async (name: string): Promise<string> => {
    const policy = { name: `${name}-p`, rules: [{ path: '/**', operations: ['read'], effect: 'allow' }] };
    assert.is((await api.json('PUT', `/v1/config/system/policies/${name}-p`, { body: policy })).status, 201);
    const user = { name, password: 'watcher-password-1', policies: [`${name}-p`] };
    assert.is((await api.json('PUT', `/v1/config/system/users/${name}`, { body: user })).status, 201);
    const login = await api.json('POST', '/v1/login', { body: { username: name, password: 'watcher-password-1' } });
    assert.is(login.status, 200);
    return (login.body as { token: string }).token;
  };
  const isExpired = (e: SseEvent) => e.event === 'expired';

  t('a deleted user: its stream ends with expired before any later change reaches it', async () => {
    const w = await watch('/v1/config/applications?watch', await reader('gone'));
    await w.next(synced, 'synced');
    assert.is((await api.json('DELETE', '/v1/config/system/users/gone')).status, 204);
    await api.json('POST', '/v1/config/applications', { body: { name: 'after-delete', version: '1' } });
    const e = await w.next(isExpired, 'expired');
    assert.is(data(e)['error-info'], 'invalid-token');
    assert.not.ok(
      w.events.some((x) => x.event === 'change'),
      `nothing after the deletion: ${JSON.stringify(w.events)}`,
    );
    await api.req('DELETE', '/v1/config/applications/after-delete');
  });

  t("changed permissions (the user's policy) end the stream before the next change", async () => {
    const w = await watch('/v1/config/applications?watch', await reader('flip'));
    await w.next(synced, 'synced');
    const deny = { name: 'flip-p', rules: [{ path: '/**', operations: ['read'], effect: 'deny' }] };
    assert.is((await api.json('PUT', '/v1/config/system/policies/flip-p', { body: deny })).status, 204);
    await api.json('POST', '/v1/config/applications', { body: { name: 'after-deny', version: '1' } });
    const e = await w.next(isExpired, 'expired');
    assert.match(String(data(e)['error-message']), /permissions changed/);
    assert.not.ok(w.events.some((x) => x.event === 'change'));
    await api.req('DELETE', '/v1/config/applications/after-deny');
  });

  t('a revoked token ends an idle stream at its next keep-alive', async () => {
    const hub = watchHub(api.instance.deps);
    const before = hub.keepAliveMs;
    hub.keepAliveMs = 50;
    try {
      const w = await watch('/v1/config/sites?watch', await reader('idle'));
      await w.next(synced, 'synced');
      assert.is((await api.json('DELETE', '/v1/config/system/users/idle')).status, 204);
      await w.next(isExpired, 'expired at a keep-alive');
    } finally {
      hub.keepAliveMs = before;
    }
  });

  t('the read decides: 401 without a token, 400 for watch with count or an unknown parameter', async () => {
    const res = await fetch(`${base}/v1/config/applications?watch`);
    assert.is(res.status, 401);
    await res.body?.cancel();
    const both = await api.json('GET', '/v1/config/applications?watch&count');
    assert.is(both.status, 400);
    assert.match(JSON.stringify(both.body), /watch/);
    const bad = await api.json('GET', '/v1/config/applications?watch=maybe');
    assert.is(bad.status, 400);
    assert.match(JSON.stringify(bad.body), /watch/);
    const post = await api.json('POST', '/v1/config/applications?watch', { body: { name: 'x', version: '1' } });
    assert.is(post.status, 400);
  });

  t('many watchers share one store subscription; closed streams leave the hub', async () => {
    const hub = watchHub(api.instance.deps);
    await eventually(() => hub.size === 0, 'streams of earlier tests left the hub', 10_000);
    const store = api.instance.deps.store;
    const original = store.onChange.bind(store);
    let subscriptions = 0;
    store.onChange = (l) => {
      subscriptions++;
      return original(l);
    };
    const ws = await Promise.all([1, 2, 3, 4, 5].map(() => watch('/v1/config/applications?watch')));
    for (const w of ws) await w.next(synced, 'synced');
    assert.is(hub.size, 5);
    assert.is(subscriptions, 1);
    store.onChange = original;
    await api.json('POST', '/v1/config/applications', { body: { name: 'fan', version: '1' } });
    for (const w of ws) await w.next(isChange('/v1/config/applications/fan'), 'fan');
    for (const w of ws) w.close();
    await eventually(
      () => hub.size === 0,
      () => `closed streams left the hub (${hub.size} left)`,
      10_000,
    );
    await api.req('DELETE', '/v1/config/applications/fan');
  });

  t.run();
}

forEachBackend(watchSuite);

const expiry = suite('watch: the stream ends when its token expires');
expiry('event: expired, then the end of the stream', async () => {
  const api = await startApi('embedded', { env: { TOKEN_TTL_SECONDS: '10' } });
  const server = await new Promise<{ s: ServerType; url: string }>((resolve) => {
    const s = serve({ fetch: api.instance.app.fetch, port: 0, hostname: '127.0.0.1' }, (info) =>
      resolve({ s, url: `http://127.0.0.1:${info.port}` }),
    );
  });
  try {
    const res = await fetch(`${server.url}/v1/config/sites?watch`, {
      headers: { authorization: `Bearer ${api.token}` },
      signal: AbortSignal.timeout(30_000),
    });
    assert.is(res.status, 200);
    const seen: string[] = [];
    let expired: unknown;
    for await (const e of readEvents(res.body as ReadableStream<Uint8Array>)) {
      seen.push(e.event);
      if (e.event === 'expired') expired = JSON.parse(e.data);
    }
    assert.equal(seen, ['synced', 'expired']);
    // The event's data is an entry of an error body: the code as a string.
    assert.is((expired as { 'error-info'?: unknown })['error-info'], 'invalid-token');
  } finally {
    await api.close();
    await new Promise<void>((resolve) => server.s.close(() => resolve()));
  }
});
expiry.run();
