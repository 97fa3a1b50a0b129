/**
 * What every `ctl` verb shares: the server's address (EDGEPLANE_URL, default
 * http://127.0.0.1:4646), the credentials file written by `ctl login` (JSON, mode 0600, one
 * token per server address; EDGEPLANE_CREDENTIALS names another file), requests with the
 * token, and errors turned into a message on stderr and an exit status.
 */
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { errorChainText } from '../lib/error-text.js';

export const defaultUrl = 'http://127.0.0.1:4646';

/** Exit statuses: 0 done, 1 the request failed (or, for diff, there are differences), 2 usage. */
export const FAILED = 1;

/** A failure already explained to the user: the message goes to stderr, `code` is the exit status. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly code = FAILED,
  ) {
    super(message);
  }
}

export type Credentials = Record<string, { token: string; expires?: string; username?: string }>;

export function serverUrl(env: NodeJS.ProcessEnv = process.env): string {
  return (env.EDGEPLANE_URL || defaultUrl).replace(/\/+$/, '');
}

export function credentialsPath(env: NodeJS.ProcessEnv = process.env): string {
  if (env.EDGEPLANE_CREDENTIALS) return env.EDGEPLANE_CREDENTIALS;
  const config = env.XDG_CONFIG_HOME || join(homedir(), '.config');
  return join(config, 'edgeplane', 'credentials');
}

/**
 * The stored tokens; none when the file does not exist. A file that is there but cannot be
 * read as credentials is said on stderr (once a run) and treated as empty: `ctl login` writes
 * it anew.
 */
export function readCredentials(path = credentialsPath()): Credentials {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') warnUnreadable(path, (err as Error).message);
    return {};
  }
  try {
    const v: unknown = JSON.parse(text);
    if (v && typeof v === 'object' && !Array.isArray(v)) return v as Credentials;
  } catch {
    // reported below
  }
  warnUnreadable(path, 'not a credentials file (JSON written by ctl login)');
  return {};
}

const warned = new Set<string>();
function warnUnreadable(path: string, why: string): void {
  if (warned.has(path)) return;
  warned.add(path);
  process.stderr.write(`edgeplane: ignoring ${path}: ${why}\n`);
}

/** Writes the file readable by its owner only (created 0600, and chmod for an older file). */
export function writeCredentials(creds: Credentials, path = credentialsPath()): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  writeFileSync(path, JSON.stringify(creds, null, 2) + '\n', { mode: 0o600 });
  chmodSync(path, 0o600);
}

export type Client = {
  url: string;
  /** Sends a request with the stored token; throws CliError when the server is unreachable. */
  request(method: string, path: string, opts?: { body?: string; type?: string; accept?: string }): Promise<Response>;
};

export function client(env: NodeJS.ProcessEnv = process.env): Client {
  const url = serverUrl(env);
  return {
    url,
    async request(method, path, opts = {}) {
      const token = readCredentials(credentialsPath(env))[url]?.token;
      const headers: Record<string, string> = { accept: opts.accept ?? 'application/json' };
      if (token) headers.authorization = `Bearer ${token}`;
      if (opts.body !== undefined) headers['content-type'] = opts.type ?? 'application/json';
      try {
        return await fetch(url + path, {
          method,
          headers,
          ...(opts.body !== undefined ? { body: opts.body } : {}),
        });
      } catch (err) {
        const cause = err instanceof Error && err.cause !== undefined ? `: ${errorChainText(err.cause)}` : '';
        throw new CliError(`cannot reach edgeplane at ${url}${cause} (set EDGEPLANE_URL)`);
      }
    },
  };
}

type WireError = { 'error-message'?: string; 'error-info'?: string; 'error-details'?: { path?: unknown } };

/** One error of the body: its message, then its code (error-info) and the field it names, if any. */
function describeError(e: WireError): string {
  const path = typeof e['error-details']?.path === 'string' ? ` at ${e['error-details'].path}` : '';
  const code = e['error-info'] ? ` [${e['error-info']}${path}]` : '';
  return `${e['error-message'] ?? ''}${code}`.trim();
}

/** The server's error body as one line per error; a hint to log in on 401. */
export async function failure(res: Response, what: string): Promise<CliError> {
  const text = await res.text();
  let messages: string[] = [];
  try {
    const body = JSON.parse(text) as { errors?: WireError[] };
    messages = (body.errors ?? []).map(describeError).filter(Boolean);
  } catch {
    if (text.trim()) messages = [text.trim().split('\n')[0] ?? ''];
  }
  // Logging in again helps a missing or expired token, not a login that was just refused.
  const hint = res.status === 401 && what !== 'login' ? '\n(run: edgeplane ctl login)' : '';
  return new CliError(`${what}: ${res.status} ${messages.join('; ') || res.statusText}${hint}`);
}

/** Throws the server's error unless the status is 2xx. */
export async function ok(res: Response, what: string): Promise<Response> {
  if (res.status >= 200 && res.status < 300) return res;
  throw await failure(res, what);
}
