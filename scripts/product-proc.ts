/**
 * The product as users run it, for the benchmarks: the esbuild bundle (`npm run build` →
 * `node build/edgeplane.cjs`) in its own process, API and exporter runtime on, started with
 * PORT=0 and a fresh DATA_DIR; the parent waits for the "listening on" line it prints.
 * BENCH_BUILD=0 reuses an existing bundle; BENCH_PROFILE=1 adds `--cpu-prof` (./profiles).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from 'redis';

export type ProductProc = { url: string; pid: number; child: ChildProcess; stop(): Promise<void> };

let built = false;

/** Builds the bundle once per benchmark run (unless BENCH_BUILD=0 and it exists). */
export function ensureBundle(): string {
  const bundle = join(process.cwd(), 'build', 'edgeplane.cjs');
  if (!built && (!existsSync(bundle) || process.env.BENCH_BUILD !== '0')) {
    const b = spawnSync('npm', ['run', 'build'], { stdio: 'inherit' });
    if (b.status !== 0) throw new Error('npm run build failed');
  }
  built = true;
  return bundle;
}

/** Waits (30 s at most) for a line of `child`'s stdout to match `re`. */
export function waitLine(child: ChildProcess, re: RegExp, what: string): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`${what} did not start`)), 30_000);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = re.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m);
      }
    });
    child.once('exit', (code) => reject(new Error(`${what} exited (${code})`)));
  });
}

/** Starts the bundle (ours, or `bundle`: another build to compare with) with `env` added to a bench default environment. */
export async function startProduct(env: Record<string, string>, bundle = ensureBundle()): Promise<ProductProc> {
  const profile = process.env.BENCH_PROFILE === '1';
  if (profile) mkdirSync('profiles', { recursive: true });
  const args = profile ? ['--cpu-prof', '--cpu-prof-dir', join(process.cwd(), 'profiles'), bundle] : [bundle];
  const child = spawn(process.execPath, args, {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: {
      ...process.env,
      PORT: '0',
      HOST: '127.0.0.1',
      SITE: 'bench',
      DATA_DIR: mkdtempSync(join(tmpdir(), 'edgeplane-bench-')),
      LOG_LEVEL: 'info',
      ...env,
    },
  });
  const m = await waitLine(child, /listening on (http:\/\/[^ ]+) /, 'edgeplane').catch((err: unknown) => {
    child.kill('SIGKILL'); // a product that did not start does not outlive the bench
    throw err;
  });
  child.stdout!.resume();
  return {
    url: m[1]!.replace('localhost', '127.0.0.1'),
    pid: child.pid ?? 0,
    child,
    stop: () =>
      new Promise<void>((done) => {
        if (child.exitCode !== null) return done();
        child.once('exit', () => done());
        child.kill('SIGTERM');
      }),
  };
}

/** CPU time (user + system) a process has used so far, in µs (Linux /proc; clock ticks of 10 ms). */
export function cpuMicros(pid: number): number {
  const fields = (readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1] ?? '').split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

/**
 * A token of `admin` (the bench's ADMIN_PASSWORD). Tried again, 20 times at most, while the
 * answer has no token: a product on a fresh Redis may answer its first login before the user
 * `admin` is written.
 */
export async function login(api: string, password: string): Promise<string> {
  let status = 0;
  for (let i = 0; i < 20; i++) {
    const r = await fetch(`${api}/v1/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'admin', password }),
      signal: AbortSignal.timeout(30_000),
    });
    status = r.status;
    const body = (await r.json()) as { token?: string };
    if (body.token) return body.token;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`login failed: ${status}`);
}

/** The redis-server's process id (INFO server), for its CPU beside the product's. */
export async function serverPid(url: string): Promise<number> {
  const c = createClient({ url });
  await c.connect();
  try {
    const pid = /process_id:(\d+)/.exec(await c.info('server'))?.[1];
    if (!pid) throw new Error('INFO server gave no process_id');
    return Number(pid);
  } finally {
    await c.close();
  }
}
