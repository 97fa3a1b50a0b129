/**
 * The real API in a child process, over real HTTP: `node --import tsx test/helpers/api-proc.ts`
 * with the usual environment (REDIS_URL, PORT — 0 for a free one —, ADMIN_PASSWORD,
 * STRONGBOX_KEY, DATA_DIR...). It serves the app with @hono/node-server, the way worker.ts
 * does, and prints one JSON line `{"port": N}` once it listens, so a parent can wait for it.
 * SIGTERM closes the server and the instance. The exporter runtime is off unless
 * API_PROC_RUNTIME=1: these processes exist to test the API under concurrency.
 *
 * `spawnApiProc()` is the parent side: starts one, waits for the port line, returns its URL;
 * a child still running when the test process exits is killed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { serve } from '@hono/node-server';

export type ApiProc = { url: string; port: number; child: ChildProcess; output: () => string; stop(): Promise<void> };

const self = fileURLToPath(import.meta.url);

/** Children still running, killed (SIGKILL) when the test process exits, whatever happened. */
const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

/** Starts this file as a child process with `env` added to the parent's environment. */
export function spawnApiProc(env: Record<string, string>): Promise<ApiProc> {
  const child = spawn(process.execPath, ['--import', 'tsx', self], {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'error', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  child.once('exit', () => live.delete(child));
  let out = '';
  child.stderr?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  return new Promise((resolve, reject) => {
    let pending = '';
    const onData = (d: Buffer) => {
      pending += d.toString();
      out += d.toString();
      for (const line of pending.split('\n').slice(0, -1)) {
        const m = /^\{"port":(\d+)\}$/.exec(line.trim());
        if (!m) continue;
        child.stdout?.off('data', onData);
        child.stdout?.on('data', (more: Buffer) => {
          out += more.toString();
        });
        const port = Number(m[1]);
        resolve({
          url: `http://127.0.0.1:${port}`,
          port,
          child,
          output: () => out,
          stop: () =>
            new Promise<void>((done) => {
              if (child.exitCode !== null) return done();
              child.once('exit', () => done());
              child.kill('SIGTERM');
            }),
        });
      }
      pending = pending.slice(pending.lastIndexOf('\n') + 1);
    };
    child.stdout?.on('data', onData);
    child.once('exit', (code) => reject(new Error(`api-proc exited with ${code} before listening:\n${out}`)));
  });
}

async function main(): Promise<void> {
  const { loadSettings } = await import('../../src/lib/settings.js');
  const { createInstance } = await import('../../src/main/server.js');
  const { serverOptions } = await import('../../src/api/node-server.js');
  const settings = loadSettings();
  const instance = await createInstance(settings, {
    runtime: process.env.API_PROC_RUNTIME === '1',
    announce: () => {},
  });
  const server = serve(
    { fetch: instance.app.fetch, port: settings.port, hostname: settings.host, serverOptions },
    (info) => {
      process.stdout.write(JSON.stringify({ port: info.port }) + '\n');
    },
  );
  process.once('SIGTERM', () => {
    server.close();
    instance.close(2000).then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
}

function isMain(): boolean {
  const entry = process.argv[1];
  try {
    return entry !== undefined && realpathSync(entry) === realpathSync(self);
  } catch {
    return false;
  }
}

// Imported by a test for spawnApiProc(); run as the program, it serves.
if (isMain()) {
  main().catch((err: unknown) => {
    process.stderr.write(`api-proc failed: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  });
}
