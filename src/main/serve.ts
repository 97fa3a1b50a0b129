/**
 * `edgeplane serve`: the service's life cycle, in an order that makes a failed start harmless.
 *
 * 1. Settings are read and checked; DATA_DIR (embedded store) is created, checked writable and
 *    locked (one process per DATA_DIR, data-dir.ts).
 * 2. The listening socket is bound. Until the instance is ready every request is answered 503
 *    with the reason (`startup.reason`).
 * 3. With REDIS_URL, Redis is waited for: one log line per failed attempt, back-off doubling
 *    up to 5 s, for as long as it takes.
 * 4. Only then the instance opens (store, bus, secret store, admin bootstrap — the first
 *    writes) and the exporter runtime starts; the "listening" line says how to log in.
 *
 * Any failure of steps 1–2 and 4 is one JSON log line `{"level":"error","msg":...,
 * "setting":..., "cause":...}` and exit code 1, with nothing written before it. SIGTERM,
 * SIGINT and SIGHUP, at any time, close the socket, finish in-flight deliveries and exit 0.
 */
import { accessSync, constants } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { getRequestListener } from '@hono/node-server';
import { lockDataDir, prepareDataDir, DataDirError, type DataDirLock } from './data-dir.js';
import {
  answerAdapterError,
  answerClientError,
  answerExpectation,
  serverOptions,
  warmResponses,
} from '../api/node-server.js';
import { errorResponse } from '../api/reply.js';
import { ApiError } from '../lib/errors.js';
import { log, setLogLevel } from '../lib/log.js';
import { describeTarget, probeRedis, toTarget, type RedisTarget } from '../lib/redis.js';
import { createInstance, type Instance } from './server.js';
import { ConfigFileError } from '../ops/config-file.js';
import { loadSettings, SettingsError, type Settings } from '../lib/settings.js';
import { backoffDelay } from '../lib/backoff.js';
import { errorText } from '../lib/error-text.js';

/** What the process waits for before it serves (a request before then is answered 503 naming `reason`). */
export type Startup = { ready: boolean; reason: string | undefined };

/** A start-up failure: the setting at fault and why, for the one error line. */
export class StartupError extends Error {
  constructor(
    readonly setting: string,
    message: string,
  ) {
    super(message);
  }
}

const drainMs = 10_000;

/** The setting that names a Redis deployment (start-up errors name it). */
function redisSetting(target: RedisTarget): string {
  return target.kind === 'standalone' ? 'REDIS_URL' : target.kind === 'sentinel' ? 'REDIS_SENTINELS' : 'REDIS_CLUSTER';
}

/** Binds the HTTP server, or throws StartupError naming PORT or HOST. */
function listen(server: Server, settings: Settings): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      const where = `${settings.host}:${settings.port}`;
      if (err.code === 'EADDRINUSE')
        reject(new StartupError('PORT', `port ${settings.port} on ${settings.host} is already in use (${where})`));
      else if (err.code === 'EACCES')
        reject(new StartupError('PORT', `no permission to listen on ${where} (ports below 1024 need privileges)`));
      else if (err.code === 'EADDRNOTAVAIL' || err.code === 'ENOTFOUND' || err.code === 'EAI_AGAIN')
        reject(
          new StartupError('HOST', `cannot listen on ${where}: ${settings.host} is not an address of this machine`),
        );
      else reject(new StartupError('PORT', `cannot listen on ${where}: ${errorText(err)}`));
    };
    server.once('error', onError);
    // A backlog beyond Node's 511 (the kernel caps it at net.core.somaxconn): thousands of edge
    // sites dial back together after a control-plane restart, and a full queue drops their SYNs
    // (each then waits 1, 3, 7... s for its retransmission).
    server.listen({ port: settings.port, host: settings.host, backlog: 8192 }, () => {
      server.off('error', onError);
      const addr = server.address();
      resolve(typeof addr === 'object' && addr ? addr.port : settings.port);
    });
  });
}

/** Redis answers that no retry will change: the URL's credentials or database are wrong. */
function fatalRedisError(text: string): boolean {
  return /^(WRONGPASS|NOAUTH|NOPERM)|invalid password|DB index is out of range|invalid DB index/i.test(text);
}

/**
 * Waits until Redis answers PING: one warn line per failed attempt, back-off 100 ms doubling
 * to 5 s. Returns false when `stopped()` turns true first. Throws StartupError for a refusal
 * no retry can fix (credentials, database number).
 */
export async function waitForRedis(
  target: RedisTarget | string,
  startup: Startup,
  stopped: () => boolean,
  sleep: (ms: number) => Promise<void> = (ms) => new Promise((r) => setTimeout(r, ms)),
): Promise<boolean> {
  for (let attempt = 1; !stopped(); attempt++) {
    let failure: string;
    try {
      await probeRedis(target);
      return true;
    } catch (err) {
      failure = errorText(err);
    }
    const setting = redisSetting(toTarget(target));
    if (fatalRedisError(failure)) throw new StartupError(setting, `Redis refused this client: ${failure}`);
    const delayMs = backoffDelay(attempt - 1, { baseMs: 100, maxMs: 5000 });
    startup.reason = `Redis at ${describeTarget(target)} is not reachable yet: ${failure}`;
    log('warn', `store not reachable yet: ${startup.reason}; retrying in ${delayMs} ms`, {
      setting,
      attempt,
      retryInMs: delayMs,
    });
    await sleep(delayMs);
  }
  return false;
}

/** Exits with the one start-up error line. */
function failStart(setting: string, cause: string): never {
  log('error', `edgeplane cannot start (${setting}): ${cause}`, { setting, cause });
  process.exit(1);
}

export async function serveMain(env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const settings = settingsOrFail(env);
  setLogLevel(settings.logLevel);
  const startup: Startup = { ready: false, reason: 'starting' };
  const life: Life = { stopping: false };
  const stop = stopper(life);
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  // The terminal that ran `npm start` closed (ssh logout): a clean stop, not a silent death.
  process.on('SIGHUP', () => stop('SIGHUP'));

  try {
    checkKeyFile(settings);
    if (!settings.redis) {
      prepareDataDir(settings.dataDir);
      life.lock = lockDataDir(settings.dataDir);
    }
    life.server = httpServer(settings, startup, () => life.instance);
    const port = await listen(life.server, settings);
    if (life.stopping) return;

    if (settings.redis) {
      startup.reason = `connecting to Redis at ${describeTarget(settings.redis)}`;
      if (!(await waitForRedis(settings.redis, startup, () => life.stopping))) return;
    }
    startup.reason = 'opening the store';
    const inst = await createInstance(settings);
    life.instance = inst;
    startup.ready = true;
    startup.reason = undefined;
    if (life.stopping) {
      // Stopped while starting: close what just started (a failure is logged, not left unhandled).
      await inst.close(drainMs).catch((err: unknown) => log('error', 'shutdown failed', { error: errorText(err) }));
      return;
    }
    announce(settings, port);
  } catch (err) {
    if (life.stopping) return;
    life.lock?.release();
    failStartOn(err, settings);
  }
}

/** What the life cycle holds, filled as it starts; `stopping` once a signal came. */
type Life = { instance?: Instance; lock?: DataDirLock; server?: Server; stopping: boolean };

function settingsOrFail(env: NodeJS.ProcessEnv): Settings {
  try {
    return loadSettings(env);
  } catch (err) {
    if (err instanceof SettingsError) failStart(err.setting, err.message);
    throw err;
  }
}

/** The close may take this long past the deliveries' drain before the process exits regardless. */
const stopSlackMs = 15_000;

/** On SIGTERM/SIGINT: stop accepting, finish in-flight deliveries, release DATA_DIR, exit. */
function stopper(life: Life): (signal: string) => void {
  return (signal) => {
    if (life.stopping) return;
    life.stopping = true;
    log('info', `${signal}: stopping (finishing in-flight deliveries)`);
    life.server?.close();
    life.server?.closeIdleConnections();
    const closing = life.instance ? life.instance.close(drainMs) : Promise.resolve();
    // Every step of the close is bounded; should one still hang, the process ends anyway
    // (what was not acknowledged is delivered again after the restart: at-least-once).
    setTimeout(() => {
      log('error', 'shutdown did not end in time; exiting', { afterMs: drainMs + stopSlackMs });
      process.exit(1);
    }, drainMs + stopSlackMs).unref();
    closing.then(
      () => {
        life.lock?.release();
        // The last line of a clean stop: a log ending without it was cut short (kill -9, a crash).
        log('info', 'stopped', { signal, exit: 0 });
        process.exit(0);
      },
      (err: unknown) => {
        log('error', 'shutdown failed', { error: errorText(err) });
        process.exit(1);
      },
    );
  };
}

function checkKeyFile(settings: Settings): void {
  if (!settings.strongboxKeyFile) return;
  try {
    accessSync(settings.strongboxKeyFile, constants.R_OK);
  } catch (err) {
    throw new StartupError('STRONGBOX_KEY_FILE', `cannot read the key file: ${errorText(err)}`);
  }
}

/** The HTTP server: the instance's app once there is one, 503 `starting` until then. */
function httpServer(settings: Settings, startup: Startup, instance: () => Instance | undefined): Server {
  const notReady = (request: Request): Response =>
    errorResponse(
      new ApiError('unavailable', `edgeplane is not ready: ${startup.reason ?? 'starting'}`, { code: 'starting' }),
      request.headers.get('accept')?.includes('yaml') ? 'yaml' : 'json',
    );
  // The adapter's listener with our errorHandler (its createAdaptorServer takes none): a request
  // no URL can be made of gets the error format rather than an empty 400.
  const listener = getRequestListener(
    // `env` carries the Node request (api/headers.ts reads headers from it: no Headers object per request).
    (request: Request, env: unknown) => {
      const inst = instance();
      if (inst) return inst.app.fetch(request, env);
      // Liveness: the process answers while it waits for Redis (a 503 here would have an
      // orchestrator restart it in a loop while Redis is down); readiness says it is not ready.
      const probe = request.method === 'GET' ? new URL(request.url).pathname : '';
      if (probe === '/healthz')
        return Response.json({
          status: 'ok',
          checks: [{ name: 'process', ok: true }],
          starting: startup.reason ?? 'starting',
        });
      // Readiness in its own shape while starting too, so a probe's client reads one format.
      if (probe === '/readyz')
        return Response.json(
          {
            status: 'not-ready',
            checks: [{ name: 'start-up', ok: false, reason: startup.reason ?? 'starting' }],
            starting: startup.reason ?? 'starting',
          },
          { status: 503 },
        );
      return notReady(request);
    },
    { errorHandler: answerAdapterError },
  );
  const server = createServer(
    {
      ...serverOptions,
      // How often Node checks the two request time-outs below (its default is 30 s).
      connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(settings.httpHeadersTimeoutMs / 4))),
    },
    // The listener never rejects (its errors are answered); Node wants a void handler.
    (req, res) => void listener(req, res),
  );
  server.on('clientError', answerClientError);
  server.on('checkExpectation', answerExpectation);
  server.headersTimeout = settings.httpHeadersTimeoutMs;
  server.requestTimeout = settings.httpRequestTimeoutMs;
  server.keepAliveTimeout = settings.httpKeepAliveTimeoutMs;
  warmResponses(server);
  return server;
}

/** The "listening on" line, with how to log in. */
function announce(settings: Settings, port: number): void {
  const host = settings.host === '0.0.0.0' || settings.host === '::' ? 'localhost' : settings.host;
  const how = settings.adminPassword
    ? 'the ADMIN_PASSWORD'
    : settings.fleet.controlPlaneUrl !== undefined
      ? 'a user of the control plane (synced here; this edge site generates no password)'
      : 'the password printed at the first start (or set ADMIN_PASSWORD)';
  log(
    'info',
    `edgeplane listening on http://${host}:${port} (site ${settings.site}); log in: POST /v1/login {"username":"admin","password":"..."} with ${how}`,
    { port, host: settings.host, site: settings.site },
  );
}

/** A start-up failure as its one error line, naming the setting at fault. */
function failStartOn(err: unknown, settings: Settings): never {
  if (err instanceof StartupError) failStart(err.setting, err.message);
  if (err instanceof DataDirError) failStart('DATA_DIR', err.message);
  if (err instanceof SettingsError) failStart(err.setting, err.message);
  if (err instanceof ConfigFileError) failStart('EDGEPLANE_CONFIG', err.message);
  const setting = settings.redis ? redisSetting(settings.redis) : 'DATA_DIR';
  failStart(setting, errorText(err));
}
