/** Environment → typed settings, validated once at start. */
import type { LogLevel } from './log.js';

export type Settings = {
  port: number;
  host: string;
  redisUrl: string | undefined;
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
};

export class SettingsError extends Error {}

function int(env: NodeJS.ProcessEnv, name: string, def: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  if (!/^\d+$/.test(raw)) throw new SettingsError(`${name} must be a whole number, got ${JSON.stringify(raw)}`);
  const n = Number(raw);
  if (n < min || n > max) throw new SettingsError(`${name} must be between ${min} and ${max}, got ${n}`);
  return n;
}

function bool(env: NodeJS.ProcessEnv, name: string, def: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new SettingsError(`${name} must be true or false, got ${JSON.stringify(raw)}`);
}

const logLevels = ['debug', 'info', 'warn', 'error'] as const;

export function loadSettings(env: NodeJS.ProcessEnv = process.env): Settings {
  const logLevel = env.LOG_LEVEL || 'info';
  if (!(logLevels as readonly string[]).includes(logLevel)) {
    throw new SettingsError(`LOG_LEVEL must be one of ${logLevels.join('|')}, got ${JSON.stringify(logLevel)}`);
  }
  const site = env.SITE || 'local';
  if (!/^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$/.test(site))
    throw new SettingsError(`SITE is not a valid site name: ${JSON.stringify(site)}`);
  return {
    port: int(env, 'PORT', 4646, 0, 65535),
    host: env.HOST || '0.0.0.0',
    redisUrl: env.REDIS_URL || undefined,
    dataDir: env.DATA_DIR || './data',
    site,
    logLevel: logLevel as LogLevel,
    tenant: env.TENANT || 'default',
    globalDomain: env.GLOBAL_DOMAIN || 'edgeplane.local',
    adminPassword: env.ADMIN_PASSWORD || undefined,
    strongboxKey: env.STRONGBOX_KEY || undefined,
    strongboxKeyFile: env.STRONGBOX_KEY_FILE || undefined,
    strongboxAutoUnseal: bool(env, 'STRONGBOX_AUTO_UNSEAL', true),
    maxBodyBytes: int(env, 'MAX_BODY_BYTES', 1024 * 1024, 1024, 1024 * 1024 * 1024),
    tokenTtlSeconds: int(env, 'TOKEN_TTL_SECONDS', 3600, 10, 365 * 24 * 3600),
  };
}
