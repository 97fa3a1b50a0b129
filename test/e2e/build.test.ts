/**
 * `npm run build` output works: the esbuild bundle and the single executable each start,
 * listen on the port they print, accept a login and answer GET /v1/config, and exit 0 on
 * SIGTERM and SIGINT.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const out = mkdtempSync(join(tmpdir(), 'edgeplane-build-'));

async function startAndAsk(
  command: string,
  args: string[],
  signal: NodeJS.Signals = 'SIGTERM',
): Promise<{ login: number; config: number; body: unknown; exit: number | string }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'edgeplane-build-data-'));
  const child = spawn(command, args, {
    env: {
      ...process.env,
      PORT: '0',
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      ADMIN_PASSWORD: 'build-test-password',
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      let buf = '';
      const timer = setTimeout(() => reject(new Error(`no listening line; output: ${buf}`)), 30_000);
      child.stdout.on('data', (d: Buffer) => {
        buf += d.toString();
        for (const line of buf.split('\n')) {
          try {
            const rec = JSON.parse(line) as { msg?: string; port?: number };
            if (rec.msg?.startsWith('edgeplane listening') && rec.port) {
              clearTimeout(timer);
              resolve(rec.port);
            }
          } catch {
            /* partial line */
          }
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`exited with ${code}; output: ${buf}`));
      });
    });
    const base = `http://127.0.0.1:${port}`;
    const login = await fetch(`${base}/v1/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'admin', password: 'build-test-password' }),
    });
    const { token } = (await login.json()) as { token: string };
    const config = await fetch(`${base}/v1/config`, { headers: { authorization: `Bearer ${token}` } });
    const body = (await config.json()) as unknown;
    const exited = new Promise<number | string>((resolve) =>
      child.once('exit', (code, sig) => resolve(code ?? sig ?? 'unknown')),
    );
    child.kill(signal);
    return { login: login.status, config: config.status, body, exit: await exited };
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }
}

test('npm run build writes a bundle and a single executable', () => {
  const log = execFileSync(process.execPath, ['--import', 'tsx', 'scripts/build.ts', '--out', out], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  assert.match(log, /bundle: .*edgeplane\.cjs/);
  assert.match(log, /executable: .*edgeplane /);
});

test('the bundle starts and answers; SIGTERM drains and exits 0', async () => {
  const r = await startAndAsk(process.execPath, [join(out, 'edgeplane.cjs')]);
  assert.is(r.exit, 0);
  assert.is(r.login, 200);
  assert.is(r.config, 200);
  assert.ok(Array.isArray(r.body));
});

test('the bundle exits 0 on SIGINT', async () => {
  const r = await startAndAsk(process.execPath, [join(out, 'edgeplane.cjs')], 'SIGINT');
  assert.is(r.exit, 0);
});

test('the single executable starts and answers; SIGTERM and SIGINT exit 0', async () => {
  const r = await startAndAsk(join(out, 'edgeplane'), []);
  assert.is(r.exit, 0);
  assert.is((await startAndAsk(join(out, 'edgeplane'), [], 'SIGINT')).exit, 0);
  assert.is(r.login, 200);
  assert.is(r.config, 200);
  assert.ok(Array.isArray(r.body));
});

test('the bundle and the single executable run the command line: --version, --help, exit 2', () => {
  const { version } = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
  for (const [cmd, pre] of [
    [process.execPath, [join(out, 'edgeplane.cjs')]],
    [join(out, 'edgeplane'), []],
  ] as const) {
    assert.is(execFileSync(cmd, [...pre, '--version'], { encoding: 'utf8' }), `edgeplane ${version}\n`);
    assert.match(execFileSync(cmd, [...pre, 'ctl', '--help'], { encoding: 'utf8' }), /apply -f FILE/);
    const bad = spawnSync(cmd, [...pre, '--nope'], { encoding: 'utf8' });
    assert.is(bad.status, 2);
    assert.match(bad.stderr, /--nope/);
  }
});

test.run();
