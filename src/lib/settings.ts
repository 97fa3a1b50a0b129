/** Environment → typed settings, validated once at start; a bad one is a SettingsError naming it. */
import { readFileSync } from 'node:fs';
import { settingDurationMs } from './duration.js';
import type { LogLevel } from './log.js';
import { errorText } from './error-text.js';
import type { RedisNode, RedisTarget } from './redis.js';

export type Settings = {
  port: number;
  host: string;
  /** REDIS_URL (one server), when that is how Redis is named. */
  redisUrl: string | undefined;
  /**
   * The Redis deployment (CONTRACT §10): REDIS_URL, REDIS_SENTINELS + REDIS_SENTINEL_MASTER or
   * REDIS_CLUSTER, with REDIS_USERNAME/REDIS_PASSWORD/REDIS_TLS_CA/REDIS_REPLICA_TIMEOUT;
   * undefined without Redis (the embedded store).
   */
  redis: RedisTarget | undefined;
  dataDir: string;
  site: string;
  logLevel: LogLevel;
  /** Name of the root tenant (SYS_TENANT of objects it owns). */
  tenant: string;
  /** Value of SYS_GLOBAL_DOMAIN. */
  globalDomain: string;
  adminPassword: string | undefined;
  strongboxKey: string | undefined;
  strongboxKeyFile: string | undefined;
  strongboxAutoUnseal: boolean;
  /** Largest request body accepted, in bytes (413 above it). */
  maxBodyBytes: number;
  /** Lifetime of a login token, in seconds. */
  tokenTtlSeconds: number;
  /** A client must send all request headers within this many ms (408 and close after). */
  httpHeadersTimeoutMs: number;
  /** ... and the whole request, body included, within this many ms. */
  httpRequestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this many ms. */
  httpKeepAliveTimeoutMs: number;
  /** When set, GET /metrics needs `Authorization: Bearer <it>`. */
  metricsToken: string | undefined;
  /** false: no /metrics route and no instrumentation at all (METRICS_ENABLED). */
  metricsEnabled: boolean;
  /** A file in the shape of GET /v1/config, applied at start as one transaction. */
  configFile: string | undefined;
  /** How long revisions of the configuration history are kept, in ms (CONFIG_HISTORY; 0: no history). */
  configHistoryMs: number;
  /** Fleet (src/fleet/): the edge-site role's settings; `controlPlaneUrl` undefined = a control plane. */
  fleet: FleetSettings;
};

export type FleetSettings = {
  /** Set at an edge site: the control plane it syncs from. */
  controlPlaneUrl: string | undefined;
  /** The site's sync token (SITE_TOKEN, or the content of SITE_TOKEN_FILE). */
  siteToken: string | undefined;
  /** PEM of the CA that signs the control plane's TLS certificate (CONTROL_PLANE_CA, a file). */
  controlPlaneCa: string | undefined;
  /** How long the control plane keeps each site's change history, in milliseconds. */
  historyMs: number;
  /** Control plane: silence on a sync stream before a bookmark (the keep-alive), in milliseconds. */
  keepAliveMs: number;
  /** Edge site: the least time between two state reports, in milliseconds. */
  reportIntervalMs: number;
  /** Edge site (FLEET_ACKS): acknowledgements in the sync request's body (`stream`) or one POST each (`post`). */
  acks: 'stream' | 'post';
};

/** A setting that cannot be used; `setting` names the environment variable. */
export class SettingsError extends Error {
  constructor(
    readonly setting: string,
    message: string,
  ) {
    super(message);
  }
}

function int(env: NodeJS.ProcessEnv, name: string, def: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  if (!/^\d+$/.test(raw)) throw new SettingsError(name, `${name} must be a whole number, got ${JSON.stringify(raw)}`);
  const n = Number(raw);
  if (n < min || n > max) throw new SettingsError(name, `${name} must be between ${min} and ${max}, got ${n}`);
  return n;
}

function bool(env: NodeJS.ProcessEnv, name: string, def: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new SettingsError(name, `${name} must be true or false, got ${JSON.stringify(raw)}`);
}

/** A duration setting: a whole number and a unit (`ms`, `s`, `m`, `h`, `d`), e.g. `7d`. */
function duration(env: NodeJS.ProcessEnv, name: string, defMs: number, minMs: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return defMs;
  const ms = settingDurationMs(raw);
  if (ms === undefined)
    throw new SettingsError(
      name,
      `${name} must be a number and a unit (ms, s, m, h, d) such as 7d, got ${JSON.stringify(raw)}`,
    );
  if (ms < minMs) throw new SettingsError(name, `${name} must be at least ${minMs} ms, got ${JSON.stringify(raw)}`);
  return ms;
}

function readSettingFile(name: string, path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new SettingsError(name, `${name}: cannot read ${path}: ${errorText(err)}`);
  }
}

/** Without CONTROL_PLANE_URL a process is a control plane (and its own site SITE), as before the fleet. */
function loadFleet(env: NodeJS.ProcessEnv): FleetSettings {
  const historyMs = duration(env, 'FLEET_HISTORY', 7 * 86_400_000, 1000);
  const keepAliveMs = duration(env, 'FLEET_KEEPALIVE', 15_000, 100);
  const reportIntervalMs = duration(env, 'FLEET_REPORT_INTERVAL', 500, 50);
  const acks = env.FLEET_ACKS || 'stream';
  if (acks !== 'stream' && acks !== 'post')
    throw new SettingsError('FLEET_ACKS', `FLEET_ACKS must be stream or post, got ${JSON.stringify(acks)}`);
  const timing = { historyMs, keepAliveMs, reportIntervalMs, acks: acks as FleetSettings['acks'] };
  const url = env.CONTROL_PLANE_URL || undefined;
  if (url === undefined)
    return { controlPlaneUrl: undefined, siteToken: undefined, controlPlaneCa: undefined, ...timing };
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new SettingsError('CONTROL_PLANE_URL', `CONTROL_PLANE_URL is not a URL: ${JSON.stringify(url)}`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw new SettingsError(
      'CONTROL_PLANE_URL',
      `CONTROL_PLANE_URL must be http:// or https://, got ${JSON.stringify(url)}`,
    );
  if (!env.SITE) throw new SettingsError('SITE', 'CONTROL_PLANE_URL is set: SITE must name this edge site');
  if (env.SITE_TOKEN && env.SITE_TOKEN_FILE)
    throw new SettingsError('SITE_TOKEN', 'Set SITE_TOKEN or SITE_TOKEN_FILE, not both');
  const token =
    env.SITE_TOKEN || (env.SITE_TOKEN_FILE ? readSettingFile('SITE_TOKEN_FILE', env.SITE_TOKEN_FILE).trim() : '');
  if (!token)
    throw new SettingsError(
      'SITE_TOKEN',
      'CONTROL_PLANE_URL is set: SITE_TOKEN or SITE_TOKEN_FILE must give the site token (issue-token)',
    );
  if (/\s/.test(token))
    throw new SettingsError('SITE_TOKEN', 'The site token must not contain whitespace (it is sent as Bearer <token>)');
  const ca = env.CONTROL_PLANE_CA ? readSettingFile('CONTROL_PLANE_CA', env.CONTROL_PLANE_CA) : undefined;
  return { controlPlaneUrl: url.replace(/\/+$/, ''), siteToken: token, controlPlaneCa: ca, ...timing };
}

/**
 * The secret store's key and the first admin password, checked before anything is written: a
 * mistake there is one line and exit 1, not a process that starts sealed, or an administrator
 * whose password the API would refuse.
 */
function checkSecretSettings(env: NodeJS.ProcessEnv): void {
  if (env.STRONGBOX_KEY && env.STRONGBOX_KEY_FILE)
    throw new SettingsError('STRONGBOX_KEY', 'Set STRONGBOX_KEY or STRONGBOX_KEY_FILE, not both');
  if (env.STRONGBOX_KEY) {
    const bytes = Buffer.from(env.STRONGBOX_KEY.trim(), 'base64').length;
    if (bytes !== 32)
      throw new SettingsError('STRONGBOX_KEY', `STRONGBOX_KEY must be 32 bytes in base64 (got ${bytes} bytes)`);
  }
  // The user schema's bounds for a password (resources/schemas.ts), for the first administrator too.
  const pw = env.ADMIN_PASSWORD;
  if (pw !== undefined && pw !== '' && (pw.length < 8 || pw.length > 1024))
    throw new SettingsError('ADMIN_PASSWORD', 'ADMIN_PASSWORD must be 8 to 1024 characters, as every password');
}

const logLevels = ['debug', 'info', 'warn', 'error'] as const;

export function loadSettings(env: NodeJS.ProcessEnv = process.env): Settings {
  const logLevel = env.LOG_LEVEL || 'info';
  if (!(logLevels as readonly string[]).includes(logLevel)) {
    throw new SettingsError(
      'LOG_LEVEL',
      `LOG_LEVEL must be one of ${logLevels.join('|')}, got ${JSON.stringify(logLevel)}`,
    );
  }
  const site = env.SITE || 'local';
  if (!/^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$/.test(site))
    throw new SettingsError('SITE', `SITE is not a valid site name: ${JSON.stringify(site)}`);
  // The root tenant's name is a segment of every store key and topic: no '/' or spaces (as a user's `@tenant`).
  const tenant = env.TENANT || 'default';
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(tenant))
    throw new SettingsError(
      'TENANT',
      `TENANT is not a valid tenant name (letters, digits, . _ -): ${JSON.stringify(tenant)}`,
    );
  const httpHeadersTimeoutMs = int(env, 'HTTP_HEADERS_TIMEOUT_MS', 10_000, 100, 3_600_000);
  const httpRequestTimeoutMs = int(env, 'HTTP_REQUEST_TIMEOUT_MS', 60_000, 100, 3_600_000);
  if (httpRequestTimeoutMs < httpHeadersTimeoutMs)
    throw new SettingsError(
      'HTTP_REQUEST_TIMEOUT_MS',
      `HTTP_REQUEST_TIMEOUT_MS (${httpRequestTimeoutMs}) must not be below HTTP_HEADERS_TIMEOUT_MS (${httpHeadersTimeoutMs})`,
    );
  // A Bearer token is one word (lib/bearer.ts): a token with a space could never be sent.
  if (env.METRICS_TOKEN && /\s/.test(env.METRICS_TOKEN))
    throw new SettingsError(
      'METRICS_TOKEN',
      'METRICS_TOKEN must not contain whitespace (it is sent as Bearer <token>)',
    );
  checkSecretSettings(env);
  return {
    port: int(env, 'PORT', 4646, 0, 65535),
    host: env.HOST || '0.0.0.0',
    redisUrl: redisUrl(env.REDIS_URL),
    redis: loadRedis(env),
    dataDir: env.DATA_DIR || './data',
    site,
    logLevel: logLevel as LogLevel,
    tenant,
    globalDomain: env.GLOBAL_DOMAIN || 'edgeplane.local',
    adminPassword: env.ADMIN_PASSWORD || undefined,
    strongboxKey: env.STRONGBOX_KEY || undefined,
    strongboxKeyFile: env.STRONGBOX_KEY_FILE || undefined,
    strongboxAutoUnseal: bool(env, 'STRONGBOX_AUTO_UNSEAL', true),
    maxBodyBytes: int(env, 'MAX_BODY_BYTES', 1024 * 1024, 1024, 1024 * 1024 * 1024),
    tokenTtlSeconds: int(env, 'TOKEN_TTL_SECONDS', 3600, 10, 365 * 24 * 3600),
    httpHeadersTimeoutMs,
    httpRequestTimeoutMs,
    httpKeepAliveTimeoutMs: int(env, 'HTTP_KEEPALIVE_TIMEOUT_MS', 5000, 100, 3_600_000),
    metricsToken: env.METRICS_TOKEN || undefined,
    metricsEnabled: bool(env, 'METRICS_ENABLED', true),
    configFile: env.EDGEPLANE_CONFIG || undefined,
    configHistoryMs: env.CONFIG_HISTORY === '0' ? 0 : duration(env, 'CONFIG_HISTORY', 30 * 86_400_000, 1000),
    fleet: loadFleet(env),
  };
}

/** `redis://` or `rediss://` with a host; the message never repeats a password. */
function redisUrl(raw: string | undefined): string | undefined {
  if (!raw) return undefined;
  const shape = 'redis://[user:password@]host[:port][/db] or rediss://...';
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new SettingsError('REDIS_URL', `REDIS_URL is not a URL (expected ${shape})`);
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:')
    throw new SettingsError('REDIS_URL', `REDIS_URL must start with redis:// or rediss://, got ${url.protocol}//`);
  if (!url.hostname) throw new SettingsError('REDIS_URL', `REDIS_URL names no host (expected ${shape})`);
  const db = url.pathname.replace(/^\//, '');
  if (db !== '' && !/^\d+$/.test(db))
    throw new SettingsError('REDIS_URL', `REDIS_URL's path must be a database number, got /${db}`);
  return raw;
}

/** `host:port,host:port,...` of `name` (at least one). */
function nodeList(env: NodeJS.ProcessEnv, name: string): RedisNode[] {
  const raw = env[name] ?? '';
  const nodes = raw.split(',').map((part) => {
    const m = /^\s*([A-Za-z0-9.-]+|\[[0-9A-Fa-f:]+\]):(\d{1,5})\s*$/.exec(part);
    const port = m ? Number(m[2]) : 0;
    if (!m || port < 1 || port > 65535)
      throw new SettingsError(
        name,
        `${name} must be a comma-separated list of host:port, got ${JSON.stringify(part.trim())} in ${JSON.stringify(raw)}`,
      );
    return { host: m[1]!.replace(/^\[|\]$/g, ''), port };
  });
  return nodes;
}

/**
 * The deployment of CONTRACT §10: exactly one of REDIS_URL, REDIS_SENTINELS (with
 * REDIS_SENTINEL_MASTER), REDIS_CLUSTER; two at once is refused naming both.
 */
function loadRedis(env: NodeJS.ProcessEnv): RedisTarget | undefined {
  const named = (['REDIS_URL', 'REDIS_SENTINELS', 'REDIS_CLUSTER'] as const).filter((n) => env[n]);
  if (named.length > 1)
    throw new SettingsError(
      named.join(', '),
      `${named.join(' and ')} both name a Redis deployment; set exactly one of REDIS_URL, REDIS_SENTINELS, REDIS_CLUSTER`,
    );
  if (env.REDIS_SENTINEL_MASTER && !env.REDIS_SENTINELS)
    throw new SettingsError(
      'REDIS_SENTINEL_MASTER',
      'REDIS_SENTINEL_MASTER is set: REDIS_SENTINELS must list the sentinels',
    );
  const common = {
    username: env.REDIS_USERNAME || undefined,
    password: env.REDIS_PASSWORD || undefined,
    tlsCa: env.REDIS_TLS_CA ? readSettingFile('REDIS_TLS_CA', env.REDIS_TLS_CA) : undefined,
    replicaTimeoutMs: duration(env, 'REDIS_REPLICA_TIMEOUT', 1000, 1),
  };
  if (named.length === 0) {
    for (const n of ['REDIS_USERNAME', 'REDIS_PASSWORD', 'REDIS_TLS_CA', 'REDIS_REPLICA_TIMEOUT'] as const)
      if (env[n])
        throw new SettingsError(n, `${n} is set but no Redis is named (REDIS_URL, REDIS_SENTINELS or REDIS_CLUSTER)`);
    return undefined;
  }
  if (env.REDIS_URL) {
    const url = redisUrl(env.REDIS_URL)!;
    if (common.tlsCa && !url.startsWith('rediss:'))
      throw new SettingsError('REDIS_TLS_CA', 'REDIS_TLS_CA is set: REDIS_URL must start with rediss://');
    return { kind: 'standalone', url, ...common };
  }
  if (env.REDIS_SENTINELS) {
    const master = env.REDIS_SENTINEL_MASTER;
    if (!master)
      throw new SettingsError(
        'REDIS_SENTINEL_MASTER',
        'REDIS_SENTINELS is set: REDIS_SENTINEL_MASTER must name the primary the sentinels watch',
      );
    return { kind: 'sentinel', sentinels: nodeList(env, 'REDIS_SENTINELS'), master, ...common };
  }
  return { kind: 'cluster', nodes: nodeList(env, 'REDIS_CLUSTER'), ...common };
}
