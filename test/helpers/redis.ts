/**
 * The one place a test gets its Redis: a real redis-server, never a mock.
 * - `freshRedisDb(db?)`: a database of the redis-server the test runner started for this file
 *   (REDIS_TEST_URL), emptied first; `redisTestUrl()` is that server's URL.
 * - `startRedis()`: a server of the test's own (a second one, one to stop and restart), on a
 *   free port in a temporary directory, installed with apt-get when missing and we are root.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from 'redis';
import { eventually } from './wait.js';

/** The runner's redis-server for this test file (REDIS_TEST_URL), without a database number. */
export function redisTestUrl(): string {
  const base = process.env.REDIS_TEST_URL;
  if (!base) throw new Error('REDIS_TEST_URL is not set: run the tests with npm test (scripts/test.ts)');
  const u = new URL(base);
  u.pathname = '';
  return u.toString().replace(/\/$/, '');
}

let nextDb = 1;

/**
 * The URL of database `db` of the runner's redis-server, emptied first. Without `db`, the next
 * one this process has not handed out yet (1 to 15, then round again), so that two suites of
 * one file never share a database by accident.
 */
export async function freshRedisDb(db?: number): Promise<string> {
  const n = db ?? nextDb;
  if (db === undefined) nextDb = (nextDb % 15) + 1;
  const url = `${redisTestUrl()}/${n}`;
  const c = createClient({ url });
  await c.connect();
  await c.flushDb();
  await c.close();
  return url;
}

export function ensureRedisInstalled(): void {
  if (spawnSync('sh', ['-c', 'command -v redis-server'], { stdio: 'ignore' }).status === 0) return;
  if (process.getuid?.() !== 0) throw new Error("redis-server is not installed; install Debian's redis-server package");
  process.stderr.write('redis-server missing: installing it with apt-get\n');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  spawnSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
  const r = spawnSync('apt-get', ['install', '-y', '-qq', 'redis-server'], { stdio: 'inherit', env });
  if (r.status !== 0) throw new Error('apt-get install redis-server failed');
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** True when something accepts connections on 127.0.0.1:port. */
export function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = connect(port, '127.0.0.1');
    sock.once('connect', () => {
      sock.destroy();
      resolve(true);
    });
    sock.once('error', () => {
      sock.destroy();
      resolve(false);
    });
  });
}

export type RedisServer = {
  url: string;
  port: number;
  dir: string;
  /** Stop (SIGTERM, or SIGKILL with hard) and wait for the exit. */
  stop(opts?: { hard?: boolean }): Promise<void>;
  /** Start again on the same port and directory (data kept when persistence is on). */
  restart(): Promise<void>;
  /** Kill it and remove its directory. */
  dispose(): Promise<void>;
  /** Sends a signal: SIGSTOP freezes it (it keeps its connections and answers nothing), SIGCONT thaws it. */
  signal(sig: NodeJS.Signals): void;
};

/** Servers still running, killed (and their directories removed) when this process exits. */
const live = new Map<RedisServer, () => void>();
process.once('exit', () => {
  for (const kill of live.values()) kill();
});

/**
 * `args`: more redis-server arguments (a replica's --replicaof, a Cluster node's settings).
 * `unref`: the server does not keep the test process alive (a deployment shared by a file's
 * suites, killed at exit).
 */
export async function startRedis(
  opts: { persist?: boolean; port?: number; args?: string[]; unref?: boolean } = {},
): Promise<RedisServer> {
  ensureRedisInstalled();
  const port = opts.port ?? (await freePort());
  const dir = mkdtempSync(join(tmpdir(), 'edgeplane-redis-'));
  let child: ChildProcess | undefined;
  const launch = async () => {
    const args = [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--dir',
      dir,
      '--save',
      '',
      '--daemonize',
      'no',
      '--loglevel',
      'warning',
    ];
    args.push('--appendonly', opts.persist ? 'yes' : 'no');
    if (opts.persist) args.push('--appendfsync', 'always');
    args.push(...(opts.args ?? []));
    child = spawn('redis-server', args, { stdio: 'ignore' });
    if (opts.unref) child.unref();
    await eventually(() => portOpen(port), `redis-server listening on ${port}`, 10_000);
  };
  await launch();
  const server: RedisServer = {
    url: `redis://127.0.0.1:${port}`,
    port,
    dir,
    async stop(o) {
      const c = child;
      child = undefined;
      if (!c || c.exitCode !== null) return;
      c.ref(); // an unreferenced server (opts.unref) must still be waited for here
      await new Promise<void>((resolve) => {
        c.once('exit', () => resolve());
        c.kill(o?.hard ? 'SIGKILL' : 'SIGTERM');
      });
    },
    async restart() {
      await server.stop();
      await launch();
    },
    signal(sig) {
      child?.kill(sig);
    },
    async dispose() {
      await server.stop({ hard: true });
      live.delete(server);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  live.set(server, () => {
    child?.kill('SIGKILL');
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch {
      /* already gone */
    }
  });
  return server;
}
