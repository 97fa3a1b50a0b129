/**
 * The binary's command line: `edgeplane [serve]` runs the service, `edgeplane ctl <verb>` is
 * the command-line client (ctl.ts), `--version` and `--help` print and exit 0; anything else
 * is a usage error (a message on stderr, exit status 2). worker.ts calls `runCli` with
 * process.argv; the service itself stays in worker.ts (`serve`).
 */
import { parseArgs } from 'node:util';
import { version } from './version.js';
import { runCtl } from './ctl.js';

export const usage = `edgeplane ${version}: edge management API and webhook exporter

Usage:
  edgeplane [serve]          run the service (settings from the environment: PORT, REDIS_URL, ...)
  edgeplane ctl <verb> ...   command-line client of a running edgeplane (edgeplane ctl --help)
  edgeplane --version        print the version
  edgeplane --help           print this help

Settings (environment; README "Settings" says more):
  PORT (4646)  HOST (0.0.0.0)  SITE (local)  LOG_LEVEL (info: debug|info|warn|error)  TENANT (default)
  REDIS_URL                  Redis for configuration, state and bus; unset: embedded store in DATA_DIR
  REDIS_SENTINELS + REDIS_SENTINEL_MASTER, or REDIS_CLUSTER   instead of REDIS_URL: Sentinel, Cluster
  REDIS_USERNAME, REDIS_PASSWORD, REDIS_TLS_CA   for any of the three
  REDIS_REPLICA_TIMEOUT (1s) a 2xx write waits this long for a replica (else 503 not-replicated)
  DATA_DIR (./data)          embedded store and bus, generated strongbox.key
  ADMIN_PASSWORD             admin's password (unset on a first start: generated and printed once)
  STRONGBOX_KEY, STRONGBOX_KEY_FILE, STRONGBOX_AUTO_UNSEAL (true)   the secret store's master key
  GLOBAL_DOMAIN (edgeplane.local)  MAX_BODY_BYTES (1048576)  TOKEN_TTL_SECONDS (3600)
  HTTP_HEADERS_TIMEOUT_MS (10000)  HTTP_REQUEST_TIMEOUT_MS (60000)  HTTP_KEEPALIVE_TIMEOUT_MS (5000)
  METRICS_TOKEN, METRICS_ENABLED (true)   /metrics access
  EDGEPLANE_CONFIG           a file in the shape of GET /v1/config, applied at start
  CONFIG_HISTORY (30d)       how long configuration revisions are kept (0: no history)
  CONTROL_PLANE_URL, SITE_TOKEN, SITE_TOKEN_FILE, CONTROL_PLANE_CA   run as an edge site of that control plane
  FLEET_HISTORY (7d)  FLEET_KEEPALIVE (15s)  FLEET_REPORT_INTERVAL (500ms)  FLEET_ACKS (stream)
  EDGEPLANE_URL (http://127.0.0.1:4646), EDGEPLANE_CREDENTIALS, EDGEPLANE_PASSWORD   for edgeplane ctl
`;

/** Exit status of a usage error (as kubectl and most Unix tools). */
export const USAGE = 2;

/**
 * Runs the command of `argv` (process.argv: node, script, arguments...). Resolves with the
 * exit status, or never when the command is `serve` (the service runs until a signal).
 */
export async function runCli(argv: readonly string[], serve: () => Promise<void>): Promise<number | 'serving'> {
  const args = argv.slice(2);
  if (args[0] === 'ctl') return runCtl(args.slice(1));
  let parsed;
  try {
    parsed = parseArgs({
      args,
      options: { version: { type: 'boolean', short: 'v' }, help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    // Node's message without its code (ERR_PARSE_ARGS_UNKNOWN_OPTION: ...), which says nothing to a user.
    const text = err instanceof Error ? err.message : String(err);
    const message = text.split('. ')[0] ?? text;
    process.stderr.write(`edgeplane: ${message}\n\n${usage}`);
    return USAGE;
  }
  if (parsed.values.help) {
    process.stdout.write(usage);
    return 0;
  }
  if (parsed.values.version) {
    process.stdout.write(`edgeplane ${version}\n`);
    return 0;
  }
  const [command, ...rest] = parsed.positionals;
  if (command !== undefined && command !== 'serve') {
    process.stderr.write(`edgeplane: unknown command ${JSON.stringify(command)}\n\n${usage}`);
    return USAGE;
  }
  if (rest.length > 0) {
    process.stderr.write(
      `edgeplane: serve takes no arguments (got ${rest.join(' ')}); settings come from the environment\n`,
    );
    return USAGE;
  }
  await serve();
  return 'serving';
}
