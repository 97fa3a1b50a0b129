/**
 * The single entry point. As a module it exports the app's `fetch` handler (built on first
 * use from the environment's settings); run directly (npm start, the bundle, the single
 * executable) it serves (src/main/serve.ts: start order, start-up failures, SIGTERM/SIGINT).
 */
// First: before any module loads node-redis (see the module).
import './src/lib/fast-strings.js';
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadSettings } from './src/lib/settings.js';
import { createInstance, type Instance } from './src/main/server.js';
import { serveMain } from './src/main/serve.js';
import { log } from './src/lib/log.js';
import { runCli } from './src/cli/main.js';
import { errorText } from './src/lib/error-text.js';

let instance: Promise<Instance> | undefined;

export default {
  async fetch(request: Request): Promise<Response> {
    instance ??= createInstance(loadSettings(), { runtime: false });
    return (await instance).app.fetch(request);
  },
};

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
  runCli(process.argv, serveMain).then(
    (code) => {
      if (code !== 'serving') process.exit(code);
    },
    (err: unknown) => {
      log('error', 'edgeplane failed to start', { error: errorText(err) });
      process.exit(1);
    },
  );
}
