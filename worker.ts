/**
 * The single entry point. As a module it exports the app's `fetch` handler (built on first
 * use from the environment's settings); run directly (npm start, the bundle, the single
 * executable) it starts the HTTP server and the exporter runtime and stops them on SIGTERM.
 */
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { serve } from '@hono/node-server';
import { loadSettings, SettingsError } from './src/settings.js';
import { createInstance, type Instance } from './src/server.js';
import { log } from './src/log.js';
import { runCli } from './src/cli/main.js';

let instance: Promise<Instance> | undefined;

export default {
  async fetch(request: Request): Promise<Response> {
    instance ??= createInstance(loadSettings(), { runtime: false });
    return (await instance).app.fetch(request);
  },
};

async function main(): Promise<void> {
  let settings;
  try {
    settings = loadSettings();
  } catch (err) {
    if (err instanceof SettingsError) {
      process.stderr.write(`edgeplane: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const inst = await createInstance(settings);
  const server = serve({ fetch: inst.app.fetch, port: settings.port, hostname: settings.host }, (info) => {
    const host = settings.host === '0.0.0.0' ? 'localhost' : settings.host;
    const how = settings.adminPassword
      ? 'the ADMIN_PASSWORD'
      : 'the password printed at the first start (or set ADMIN_PASSWORD)';
    log(
      'info',
      `edgeplane listening on http://${host}:${info.port} (site ${settings.site}); log in: POST /v1/login {"username":"admin","password":"..."} with ${how}`,
      { port: info.port, host: settings.host, site: settings.site },
    );
  });
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log('info', `${signal}: stopping (finishing in-flight deliveries)`);
    server.close();
    inst.close(10_000).then(
      () => process.exit(0),
      (err: unknown) => {
        log('error', 'shutdown failed', { error: String(err) });
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

/** True when this file is the program (tsx worker.ts, node build/edgeplane.cjs, the SEA). */
function isMain(): boolean {
  if (process.env.EDGEPLANE_NO_MAIN === '1') return false;
  if (isSea()) return true;
  const entry = process.argv[1];
  if (!entry) return true;
  try {
    const self = typeof __filename === 'string' ? __filename : fileURLToPath(import.meta.url);
    return realpathSync(entry) === realpathSync(self);
  } catch {
    return false;
  }
}

declare const __filename: string | undefined;

function isSea(): boolean {
  try {
    // node:sea exists from Node 20.12; require is there in the CommonJS bundle only.
    const req = typeof require === 'function' ? require : undefined;
    const sea = req?.('node:sea') as { isSea(): boolean } | undefined;
    return sea?.isSea() ?? false;
  } catch {
    return false;
  }
}

if (isMain()) {
  runCli(process.argv, main).then(
    (code) => {
      if (code !== 'serving') process.exit(code);
    },
    (err: unknown) => {
      log('error', 'edgeplane failed to start', { error: err instanceof Error ? err.message : String(err) });
      process.exit(1);
    },
  );
}
