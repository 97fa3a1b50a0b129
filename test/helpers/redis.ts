/**
 * A real redis-server for tests and benchmarks: started on a free port in a temporary
 * directory, installed with apt-get when missing and we are root. Never a mock.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

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

function waitForPort(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const attempt = () => {
      const sock = connect(port, '127.0.0.1');
      sock.once('connect', () => {
        sock.destroy();
        resolve();
      });
      sock.once('error', () => {
        sock.destroy();
        if (Date.now() > deadline) reject(new Error(`redis-server did not listen on ${port}`));
        else setTimeout(attempt, 25);
      });
    };
    attempt();
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
};

/** Servers still running, killed (and their directories removed) when this process exits. */
const live = new Map<RedisServer, () => void>();
process.once('exit', () => {
  for (const kill of live.values()) kill();
});

export async function startRedis(opts: { persist?: boolean; port?: number } = {}): Promise<RedisServer> {
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
    child = spawn('redis-server', args, { stdio: 'ignore' });
    await waitForPort(port, 10_000);
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
      await new Promise<void>((resolve) => {
        c.once('exit', () => resolve());
        c.kill(o?.hard ? 'SIGKILL' : 'SIGTERM');
      });
    },
    async restart() {
      await server.stop();
      await launch();
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
