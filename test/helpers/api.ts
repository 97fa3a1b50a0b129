/**
 * An edgeplane instance for HTTP tests: the real app on the embedded store (temp dir) or on
 * the test Redis (a database of its own, emptied: helpers/redis.ts), logged in as admin. Requests go
 * through app.fetch, the same handler the server runs; with EDGEPLANE_RECORD_REPLIES=<dir> each
 * reply is recorded there (helpers/openapi-check.ts) to be checked against the OpenAPI document.
 */
import type { Test } from 'uvu';
import { loadSettings, type Settings } from '../../src/lib/settings.js';
import { createInstance, type Instance } from '../../src/main/server.js';
import { tempDir, type Backend } from './backends.js';
import { freshRedisDb } from './redis.js';
import { recordReply } from './openapi-check.js';

export type TestApi = {
  instance: Instance;
  settings: Settings;
  token: string;
  /** Sends a request with the admin token (unless headers.authorization is given). */
  req(
    method: string,
    path: string,
    opts?: { body?: unknown; raw?: string; type?: string; headers?: Record<string, string> },
  ): Promise<Response>;
  json(
    method: string,
    path: string,
    opts?: { body?: unknown; raw?: string; type?: string; headers?: Record<string, string> },
  ): Promise<{ status: number; body: unknown; headers: Headers }>;
  close(): Promise<void>;
};

export type StartOptions = { db?: number; env?: Record<string, string>; runtime?: boolean };

export async function startApi(backend: Backend, opts: StartOptions = {}): Promise<TestApi> {
  const dataDir = tempDir('edgeplane-api-');
  const env: Record<string, string> = {
    DATA_DIR: dataDir,
    ADMIN_PASSWORD: 'admin-password-1',
    LOG_LEVEL: 'error',
    SITE: 'local',
    ...opts.env,
  };
  if (backend === 'redis') env.REDIS_URL = await freshRedisDb(opts.db);
  const settings = loadSettings(env);
  const instance = await createInstance(settings, { runtime: opts.runtime ?? false, announce: () => {} });
  const call = async (
    method: string,
    path: string,
    o: { body?: unknown; raw?: string; type?: string; headers?: Record<string, string> } = {},
  ) => {
    const headers: Record<string, string> = { ...o.headers };
    if (!('authorization' in headers) && api.token) headers.authorization = `Bearer ${api.token}`;
    if (headers.authorization === '') delete headers.authorization;
    let body: string | undefined;
    if (o.raw !== undefined) body = o.raw;
    else if (o.body !== undefined) body = JSON.stringify(o.body);
    if (body !== undefined) headers['content-type'] = o.type ?? 'application/json';
    const res = await instance.app.fetch(
      new Request(`http://edgeplane.test${path}`, { method, headers, ...(body !== undefined ? { body } : {}) }),
    );
    // EDGEPLANE_RECORD_REPLIES=<dir>: kept for the check against the OpenAPI document (openapi-check.ts).
    await recordReply(method, path, res);
    return res;
  };
  const api: TestApi = {
    instance,
    settings,
    token: '',
    req: call,
    async json(method, path, o) {
      const res = await call(method, path, o);
      const text = await res.text();
      let body: unknown = text;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        /* not JSON: keep the text */
      }
      return { status: res.status, body, headers: res.headers };
    },
    close: () => instance.close(1000),
  };
  const login = await api.json('POST', '/v1/login', {
    body: { username: 'admin', password: 'admin-password-1' },
    headers: { authorization: '' },
  });
  if (login.status !== 200) throw new Error(`login failed: ${login.status} ${JSON.stringify(login.body)}`);
  api.token = (login.body as { token: string }).token;
  return api;
}

/**
 * The API of a suite: started in `t`'s before hook (then `setup` runs on it), closed in its after
 * hook. What it returns stands for that instance in the suite's tests.
 */
export function useApi(
  t: Test,
  backend: Backend,
  opts: StartOptions & { setup?: (api: TestApi) => Promise<void> } = {},
): TestApi {
  let current: TestApi | undefined;
  const api = (): TestApi => {
    if (!current) throw new Error("the suite's API starts in its before hook");
    return current;
  };
  t.before(async () => {
    current = await startApi(backend, opts);
    await opts.setup?.(current);
  });
  t.after(async () => {
    await current?.close();
    current = undefined;
  });
  return {
    get instance() {
      return api().instance;
    },
    get settings() {
      return api().settings;
    },
    get token() {
      return api().token;
    },
    set token(v: string) {
      api().token = v;
    },
    req: (method, path, o) => api().req(method, path, o),
    json: (method, path, o) => api().json(method, path, o),
    close: () => api().close(),
  };
}

/** POST /v1/login as `username` (`name@tenant` for a subtenant's user), without the admin token. */
export function loginAs(
  api: TestApi,
  username: string,
  password: string,
): Promise<{ status: number; body: unknown; headers: Headers }> {
  return api.json('POST', '/v1/login', { body: { username, password }, headers: { authorization: '' } });
}
