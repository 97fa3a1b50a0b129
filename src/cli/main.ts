/**
 * The binary's command line: `edgeplane [serve]` runs the service, `edgeplane ctl <verb>` is
 * the command-line client (ctl.ts), `--version` and `--help` print and exit 0; anything else
 * is a usage error (a message on stderr, exit status 2). worker.ts calls `runCli` with
 * process.argv; the service itself stays in worker.ts (`serve`).
 */
import { parseArgs } from 'node:util';
import { version } from './version.js';
import { runCtl } from './ctl.js';
import { errorText } from '../lib/error-text.js';

export const usage = `edgeplane ${version}: edge management API and webhook exporter

Usage:
  edgeplane [serve]          run the service (settings from the environment: PORT, REDIS_URL, ...)
  edgeplane ctl <verb> ...   command-line client of a running edgeplane (edgeplane ctl --help)
  edgeplane --version        print the version
  edgeplane --help           print this help
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
    const text = errorText(err);
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
