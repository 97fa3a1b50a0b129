/**
 * Start-up as a user meets it (the real program, `node --import tsx worker.ts`): a failure is
 * one JSON error line naming the setting and the cause, exit code 1, and nothing happened
 * before it (no password printed, no file written). An unreachable Redis is waited for, one
 * log line per attempt, requests answered 503 with the reason meanwhile. Redis lost after
 * start-up: login, writes and produce answer 503 (none is held until Redis is back), and the
 * connection errors are logged as the outage starts, not at every reconnect attempt.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, startRedis } from '../helpers/redis.js';
import { startServe, type ServeProc } from '../helpers/serve-proc.js';
import { eventually } from '../helpers/wait.js';
import { replyChecker } from '../helpers/openapi-check.js';
import { openApiRoutes } from '../../src/ops/openapi.js';
import { waitForRedis } from '../../src/main/serve.js';

const tmp = (name: string) => mkdtempSync(join(tmpdir(), `edgeplane-startup-${name}-`));

/** Runs the program to its exit; asserts exit 1 and exactly one JSON line, which it returns. */
async function failsWithOneLine(env: Record<string, string>): Promise<{ setting: string; msg: string; p: ServeProc }> {
  const p = startServe(env);
  const code = await p.exited();
  assert.is(code, 1, p.output());
  const printed = p
    .output()
    .split('\n')
    .filter((l) => l.trim() !== '');
  assert.is(printed.length, 1, `one line only, got:\n${p.output()}`);
  const line = JSON.parse(printed[0] as string) as { level: string; msg: string; setting: string; cause: string };
  assert.is(line.level, 'error');
  assert.ok(line.cause.length > 0);
  assert.not.match(p.output(), /generated a password/);
  return { setting: line.setting, msg: line.msg, p };
}

test('a port in use: one line naming PORT, exit 1, no password generated, nothing written', async () => {
  const port = await freePort();
  const blocker: Server = createServer();
  await new Promise<void>((r) => blocker.listen(port, '127.0.0.1', () => r()));
  try {
    const dataDir = tmp('port');
    const r = await failsWithOneLine({ PORT: String(port), DATA_DIR: dataDir });
    assert.is(r.setting, 'PORT');
    assert.match(r.msg, /in use/);
    assert.equal(readdirSync(dataDir), [], 'no store, key or lock file left');
  } finally {
    blocker.close();
  }
});

test('REDIS_URL=nonsense: one line naming REDIS_URL and the expected shape', async () => {
  const r = await failsWithOneLine({ PORT: '0', REDIS_URL: 'nonsense', DATA_DIR: tmp('url') });
  assert.is(r.setting, 'REDIS_URL');
  assert.match(r.msg, /redis:\/\//);
});

test('two Redis deployments named at once: one line naming both, exit 1 (CONTRACT §10)', async () => {
  const r = await failsWithOneLine({
    PORT: '0',
    REDIS_URL: 'redis://127.0.0.1:1',
    REDIS_CLUSTER: '127.0.0.1:2,127.0.0.1:3',
    DATA_DIR: tmp('two'),
  });
  assert.is(r.setting, 'REDIS_URL, REDIS_CLUSTER');
  assert.match(r.msg, /REDIS_URL and REDIS_CLUSTER both name a Redis deployment/);
  const s = await failsWithOneLine({
    PORT: '0',
    REDIS_SENTINELS: '127.0.0.1:2',
    REDIS_SENTINEL_MASTER: 'm',
    REDIS_CLUSTER: '127.0.0.1:3',
    DATA_DIR: tmp('two2'),
  });
  assert.is(s.setting, 'REDIS_SENTINELS, REDIS_CLUSTER');
});

test('REDIS_SENTINELS without REDIS_SENTINEL_MASTER, or not host:port: one line naming the setting', async () => {
  const r = await failsWithOneLine({ PORT: '0', REDIS_SENTINELS: '127.0.0.1:2', DATA_DIR: tmp('s1') });
  assert.is(r.setting, 'REDIS_SENTINEL_MASTER');
  const s = await failsWithOneLine({
    PORT: '0',
    REDIS_SENTINELS: '127.0.0.1:2,nonsense',
    REDIS_SENTINEL_MASTER: 'm',
    DATA_DIR: tmp('s2'),
  });
  assert.is(s.setting, 'REDIS_SENTINELS');
  assert.match(s.msg, /host:port/);
});

test('REDIS_URL with another scheme never repeats its password', async () => {
  const r = await failsWithOneLine({ PORT: '0', REDIS_URL: 'http://user:hunter2secret@h:1', DATA_DIR: tmp('url2') });
  assert.is(r.setting, 'REDIS_URL');
  assert.not.match(r.p.output(), /hunter2secret/);
});

test('a bad setting: one JSON line naming it, exit 1', async () => {
  const r = await failsWithOneLine({ PORT: 'eighty', DATA_DIR: tmp('bad') });
  assert.is(r.setting, 'PORT');
  assert.match(r.msg, /eighty/);
  const l = await failsWithOneLine({ PORT: '0', LOG_LEVEL: 'loud', DATA_DIR: tmp('bad2') });
  assert.is(l.setting, 'LOG_LEVEL');
});

test('an unusable DATA_DIR: one line naming DATA_DIR', async () => {
  const dir = tmp('file');
  const file = join(dir, 'not-a-dir');
  writeFileSync(file, 'x');
  const r = await failsWithOneLine({ PORT: '0', DATA_DIR: join(file, 'data') });
  assert.is(r.setting, 'DATA_DIR');
  assert.match(r.msg, /not-a-dir/);
});

test('an unreadable STRONGBOX_KEY_FILE: one line naming it, no password generated', async () => {
  const dataDir = tmp('keyfile');
  const r = await failsWithOneLine({ PORT: '0', DATA_DIR: dataDir, STRONGBOX_KEY_FILE: join(dataDir, 'missing.key') });
  assert.is(r.setting, 'STRONGBOX_KEY_FILE');
});

test('Redis unreachable at start: a line per retry, 503 with the reason, then serves once Redis is up', async () => {
  const redisPort = await freePort();
  const port = await freePort();
  const p = startServe({
    PORT: String(port),
    REDIS_URL: `redis://127.0.0.1:${redisPort}`,
    ADMIN_PASSWORD: 'startup-test-password',
    STRONGBOX_KEY: Buffer.alloc(32, 7).toString('base64'),
  });
  let redis: Awaited<ReturnType<typeof startRedis>> | undefined;
  try {
    const retry = (n: number) => (l: { msg?: string; attempt?: unknown }) =>
      typeof l.msg === 'string' && l.msg.startsWith('store not reachable yet') && l.attempt === n;
    const first = await p.waitLine(retry(1));
    assert.is(first.setting, 'REDIS_URL');
    assert.is(first.level, 'warn');
    await p.waitLine(retry(2));
    assert.not.ok(
      p.lines().some((l) => typeof l.msg === 'string' && l.msg.startsWith('edgeplane listening')),
      'not announced before it can serve',
    );
    // The socket is bound already.
    const res = await fetch(`http://127.0.0.1:${port}/v1/config`);
    assert.is(res.status, 503);
    const body = (await res.json()) as { errors: { 'error-message': string }[] };
    assert.match(body.errors[0]?.['error-message'] ?? '', /not reachable yet/);

    redis = await startRedis({ port: redisPort });
    assert.is(await p.listening(), port);
    const login = await fetch(`http://127.0.0.1:${port}/v1/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'admin', password: 'startup-test-password' }),
    });
    assert.is(login.status, 200);
    p.kill('SIGTERM');
    assert.is(await p.exited(), 0);
    // A clean stop says so last.
    assert.equal(p.lines().at(-1)?.msg, 'stopped', p.output());
  } finally {
    p.kill('SIGKILL');
    await redis?.dispose();
  }
});

/** A process on a real Redis of its own, logged in as admin: where the Redis-outage tests start. */
async function loggedInOnRedis() {
  const redis = await startRedis();
  const port = await freePort();
  const p = startServe({
    PORT: String(port),
    REDIS_URL: redis.url,
    ADMIN_PASSWORD: 'startup-test-password',
    STRONGBOX_KEY: Buffer.alloc(32, 7).toString('base64'),
  });
  const api = `http://127.0.0.1:${port}`;
  const json = { 'content-type': 'application/json' };
  const login = () =>
    fetch(`${api}/v1/login`, {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ username: 'admin', password: 'startup-test-password' }),
      // Held until Redis came back, before: a bound far above any answer's time.
      signal: AbortSignal.timeout(20_000),
    });
  try {
    assert.is(await p.listening(), port);
    const token = ((await (await login()).json()) as { token: string }).token;
    return { redis, p, api, json, login, auth: { ...json, authorization: `Bearer ${token}` } };
  } catch (err) {
    p.kill('SIGKILL');
    await redis.dispose();
    throw err;
  }
}

test('Redis lost after start-up: login, a write and produce answer 503, not held; connection errors are not logged at each attempt, and a second outage is logged as it starts', async () => {
  const { redis, p, api, login, auth } = await loggedInOnRedis();
  try {
    await redis.stop({ hard: true });
    const calls: Array<[string, () => Promise<Response>]> = [
      ['login', login],
      [
        'PUT',
        () =>
          fetch(`${api}/v1/config/sites/x1`, {
            method: 'PUT',
            headers: auth,
            body: JSON.stringify({ name: 'x1' }),
            signal: AbortSignal.timeout(20_000),
          }),
      ],
      [
        'produce',
        () =>
          fetch(`${api}/v1/state/volga/topics/t/produce`, {
            method: 'POST',
            headers: auth,
            body: JSON.stringify({ payload: 'x' }),
            signal: AbortSignal.timeout(20_000),
          }),
      ],
    ];
    for (let round = 0; round < 3; round++)
      for (const [what, call] of calls) {
        const res = await call();
        const body = (await res.json()) as { errors: { 'error-info': string }[] };
        assert.is(res.status, 503, `${what}: ${JSON.stringify(body)}`);
        assert.is(body.errors[0]?.['error-info'], 'store-unavailable', what);
      }
    const errors = p.lines().filter((l) => l.msg === 'redis connection error');
    // One line per client as the outage starts (a handful of clients), not one per attempt.
    const roles = new Set(errors.map((l) => l.role));
    assert.ok(errors.length <= roles.size, `${errors.length} lines for ${roles.size} clients`);
    // Back, then lost again within seconds: the new outage is logged as it starts, not 30 s later.
    await redis.restart();
    await eventually(async () => (await fetch(`${api}/readyz`)).status === 200, 'ready again', {
      timeoutMs: 20_000,
      retryErrors: true,
    });
    // This Redis keeps nothing across a restart: the process says its data is gone.
    await eventually(
      () =>
        p
          .lines()
          .some(
            (l) =>
              l.level === 'error' &&
              l.msg === 'store: Redis came back empty: the configuration, users and tokens are gone',
          ),
      () =>
        `a line saying Redis came back empty: ${p
          .lines()
          .filter((l) => String(l.msg).startsWith('store'))
          .map((l) => JSON.stringify(l))
          .join('\n')}`,
      10_000,
    );
    await redis.stop({ hard: true });
    // Well within the 30 s that kept a second outage's line back before.
    await eventually(
      () => p.lines().filter((l) => l.msg === 'redis connection error').length > errors.length,
      'a line for the second outage',
      10_000,
    );
    p.kill('SIGTERM');
    assert.is(await p.exited(), 0);
  } finally {
    p.kill('SIGKILL');
    await redis.dispose();
  }
});

test('a Redis that takes commands and never answers (stopped, a partition): 503 store-unavailable after 10 s, not held; it recovers', async () => {
  const { redis, p, api, auth } = await loggedInOnRedis();
  try {
    redis.signal('SIGSTOP');
    try {
      // Held until TCP gave up (minutes) before: a bound far above the 10 s.
      const calls = await Promise.all([
        fetch(`${api}/v1/config/sites?fields=name`, { headers: auth, signal: AbortSignal.timeout(30_000) }),
        fetch(`${api}/v1/state/volga/topics/t/produce`, {
          method: 'POST',
          headers: auth,
          body: JSON.stringify({ payload: 'x' }),
          signal: AbortSignal.timeout(30_000),
        }),
      ]);
      for (const res of calls) {
        const body = (await res.json()) as { errors: { 'error-info': string; 'error-message': string }[] };
        assert.is(res.status, 503, JSON.stringify(body));
        assert.is(body.errors[0]?.['error-info'], 'store-unavailable');
        assert.match(body.errors[0]?.['error-message'] ?? '', /within 10 s/);
      }
    } finally {
      redis.signal('SIGCONT');
    }
    await eventually(
      async () => (await fetch(`${api}/v1/config/sites?fields=name`, { headers: auth })).status === 200,
      'answers again once Redis does',
      { timeoutMs: 20_000, retryErrors: true },
    );
    // SIGHUP (the terminal closed) stops it as SIGTERM does.
    p.kill('SIGHUP');
    assert.is(await p.exited(), 0);
    assert.equal(p.lines().at(-1)?.msg, 'stopped', p.output());
  } finally {
    p.kill('SIGKILL');
    await redis.dispose();
  }
});

test('its log pipe closed (| head, a log shipper gone): the process goes on serving, no stack trace', async () => {
  const port = await freePort();
  const p = startServe({
    PORT: String(port),
    DATA_DIR: mkdtempSync(join(tmpdir(), 'edgeplane-epipe-')),
    ADMIN_PASSWORD: 'startup-test-password',
  });
  try {
    assert.is(await p.listening(), port);
    p.child.stdout?.destroy(); // the reading end goes away: the next log line meets EPIPE
    // Lines are logged (a refused login) after the pipe is gone; the process stays.
    for (let i = 0; i < 3; i++)
      await fetch(`http://127.0.0.1:${port}/v1/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username: 'admin', password: 'wrong-password' }),
      });
    await new Promise((r) => setTimeout(r, 200));
    assert.is((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200, p.output());
    assert.is(p.child.exitCode, null, 'still running');
    // Its stop logs several lines into the closed pipe, and ends cleanly.
    p.kill('SIGTERM');
    assert.is(await p.exited(), 0, p.output());
  } finally {
    p.kill('SIGKILL');
  }
});

test('while waiting for Redis: /healthz 200 (alive, with the reason), /readyz and the API 503', async () => {
  const port = await freePort();
  const p = startServe({
    PORT: String(port),
    REDIS_URL: `redis://127.0.0.1:${await freePort()}`,
    ADMIN_PASSWORD: 'startup-test-password',
  });
  try {
    await eventually(
      async () => (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.status === 503,
      'answering, not ready',
      { timeoutMs: 20_000 },
    );
    const health = await fetch(`http://127.0.0.1:${port}/healthz`);
    assert.is(health.status, 200);
    const body = (await health.json()) as { status: string; starting?: string };
    assert.is(body.status, 'ok');
    assert.match(body.starting ?? '', /not reachable yet/);
    // Readiness in its own shape (as once started), the reason in its check.
    const ready = (await (await fetch(`http://127.0.0.1:${port}/readyz`)).json()) as {
      status: string;
      checks: Array<{ name: string; ok: boolean; reason?: string }>;
    };
    assert.is(ready.status, 'not-ready');
    assert.equal(
      ready.checks.map((c) => [c.name, c.ok]),
      [['start-up', false]],
    );
    assert.match(ready.checks[0]?.reason ?? '', /not reachable yet/);
    assert.is((await fetch(`http://127.0.0.1:${port}/v1/config`)).status, 503);
    // Each 503 while starting is one the OpenAPI document declares, in its error format.
    const doc = (await (await openApiRoutes().request('/v1/openapi.json')).json()) as Parameters<
      typeof replyChecker
    >[0];
    const check = replyChecker(doc);
    for (const [method, path] of [
      ['GET', '/metrics'],
      ['GET', '/v1/config'],
      ['GET', '/v1/openapi.json'],
      ['POST', '/v1/login'],
      ['GET', '/v1/state/volga/webhooks'],
    ] as const) {
      const r = await fetch(`http://127.0.0.1:${port}${path}`, { method });
      const body = await r.text();
      assert.is(r.status, 503, path);
      assert.match(body, /"error-info":"starting"/, path);
      const checked = check({ method, path, status: r.status, contentType: r.headers.get('content-type'), body });
      assert.is(checked.problem, undefined, `${method} ${path}: ${checked.problem}`);
    }
  } finally {
    p.kill('SIGKILL');
  }
});

test('DATA_DIR under /proc: exit 1 with the reason at once (it looped at 100 % CPU, deaf to SIGTERM)', async () => {
  const p = startServe({ PORT: '0', DATA_DIR: '/proc/edgeplane-nope', ADMIN_PASSWORD: 'startup-test-password' });
  try {
    assert.is(await p.exited(), 1, p.output());
    assert.match(p.output(), /DATA_DIR/);
  } finally {
    p.kill('SIGKILL');
  }
});

test('waitForRedis: one warn line per attempt with a doubling, capped delay; the reason is exposed', async () => {
  const port = await freePort();
  const startup = { ready: false, reason: undefined as string | undefined };
  const delays: number[] = [];
  const logged: string[] = [];
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((chunk: string) => {
    logged.push(String(chunk));
    return true;
  }) as typeof process.stdout.write;
  try {
    const ok = await waitForRedis(
      `redis://127.0.0.1:${port}`,
      startup,
      () => delays.length >= 8,
      async (ms) => {
        delays.push(ms);
      },
    );
    assert.is(ok, false, 'stopped before Redis came');
  } finally {
    process.stdout.write = write;
  }
  assert.equal(delays, [100, 200, 400, 800, 1600, 3200, 5000, 5000]);
  assert.is(logged.filter((l) => l.includes('store not reachable yet')).length, 8);
  assert.match(String(startup.reason), /not reachable yet/);
});

test.run();
