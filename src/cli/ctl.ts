/**
 * `edgeplane ctl <verb> [arguments] [flags]`: the command-line client. Data goes to stdout,
 * messages to stderr; exit status 0 done, 1 failed (diff: 1 = there are differences),
 * 2 usage error. Each verb group lives in its own file.
 */
import { parseArgs } from 'node:util';
import { CliError, client } from './client.js';
import type { Flags, Verb } from './verb.js';

export type { Flags, Verb };
import { login, logout } from './login.js';
import { apply, create, del, diff, get, merge, replace } from './resources.js';
import { watch } from './watch.js';
import { produce, restart } from './ops.js';
import { top } from './top.js';
import { attempts, deadLetter, pause, resume, rewind, rollback } from './exporter-ops.js';
import { rollout } from './rollout.js';
import { errorText } from '../lib/error-text.js';

export const ctlUsage = `Usage: edgeplane ctl <verb> [arguments] [flags]

Talks to EDGEPLANE_URL (default http://127.0.0.1:4646) with the token of \`ctl login\`
(kept in ~/.config/edgeplane/credentials, mode 0600; EDGEPLANE_CREDENTIALS names another file).
A path is /v1/config/..., config/..., state/..., or just sites/a (configuration); its elements
may also be separated by spaces, as supctl users type them: \`get volga webhooks\` is \`get volga/webhooks\`.

Verbs:
  login [-u admin]                  log in (password from EDGEPLANE_PASSWORD, --password-stdin or a prompt)
  logout                            forget the token of this server
  get <path>                        read (-o yaml|json|table, --where, --fields, --site for state)
  create <list-path> -f FILE        create the object of FILE in a list (POST)
  replace <path> -f FILE            replace an object (PUT)
  merge <path> -f FILE              merge FILE into an object (PATCH)
  delete <path>                     delete an object
  apply -f FILE                     create or replace every object of FILE (the shape of ctl get /v1/config)
  diff -f FILE                      what apply would change; exit 0 when nothing, 1 when something, 2 on trouble
  watch <path>                      print the objects, then each change (--where, --fields, -o json|yaml)
  produce <topic> [JSON|-f FILE]    produce one message (the payload)
  restart <webhook>                 restart a webhook exporter
  top                               live table of the exporters, at a control plane a line per site, the rollouts and the sites (q to quit)
  pause <webhook>                   pause an exporter (enabled: false; its position is kept)
  resume <webhook>                  resume it (enabled: true)
  rewind <webhook> <to>             move its position: beginning, end, a seqno or an ISO time
  attempts <webhook>                its last 100 POST attempts, newest first (--site, -o)
  dead-letter <webhook>             its dead-letter topic: length and last entry (--site, -o)
  rollback <revision> [--dry-run]   every object changed after that revision back as it was
                                    (ctl get state/config-revisions lists the revisions)
  rollout [resume|abort] <path>     at a control plane: an object's staged rollout (wave, state,
                                    sites updated, reason; -o), or resume it, or abort it (rollback);
                                    a bare name is an exporter's

Flags: -o, --output yaml|json|table   -f, --file FILE (- for stdin)   --site NAME
       --where EXPR   --fields LIST   -u, --username NAME   --password-stdin   --dry-run   -h, --help
`;

/** Flags each verb accepts besides --help (others are a usage error naming them). */
/** `path`: the verb's one argument is a path, whose elements may come as separate arguments (supctl style). */
const verbs: Record<
  string,
  { run: (v: Verb) => Promise<number>; flags: Array<keyof Flags>; args: [number, number]; path?: true }
> = {
  login: { run: login, flags: ['username', 'password-stdin'], args: [0, 0] },
  logout: { run: logout, flags: [], args: [0, 0] },
  get: { run: get, flags: ['output', 'site', 'where', 'fields'], args: [0, 1], path: true },
  create: { run: create, flags: ['file', 'output'], args: [1, 1], path: true },
  replace: { run: replace, flags: ['file'], args: [1, 1], path: true },
  merge: { run: merge, flags: ['file'], args: [1, 1], path: true },
  delete: { run: del, flags: [], args: [1, 1], path: true },
  apply: { run: apply, flags: ['file'], args: [0, 0] },
  diff: { run: diff, flags: ['file'], args: [0, 0] },
  watch: { run: watch, flags: ['output', 'site', 'where', 'fields'], args: [1, 1], path: true },
  produce: { run: produce, flags: ['file'], args: [1, 2] },
  restart: { run: restart, flags: [], args: [1, 1] },
  top: { run: top, flags: ['site'], args: [0, 0] },
  pause: { run: pause, flags: [], args: [1, 1] },
  resume: { run: resume, flags: [], args: [1, 1] },
  rewind: { run: rewind, flags: [], args: [2, 2] },
  attempts: { run: attempts, flags: ['site', 'output'], args: [1, 1] },
  'dead-letter': { run: deadLetter, flags: ['site', 'output'], args: [1, 1] },
  rollback: { run: rollback, flags: ['dry-run', 'output'], args: [1, 1] },
  rollout: { run: rollout, flags: ['output'], args: [1, 2] },
};

let quietOnClosedPipe = false;

export async function runCtl(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  // A reader that goes away (`ctl top | head`, `ctl get ... | head -1`) ends the command
  // quietly, as Unix tools do, instead of an unhandled EPIPE.
  if (!quietOnClosedPipe) {
    quietOnClosedPipe = true;
    process.stdout.on('error', (e: NodeJS.ErrnoException) => {
      if (e.code === 'EPIPE') process.exit(0);
      throw e;
    });
  }
  const err = (t: string) => void process.stderr.write(t);
  const out = (t: string) => void process.stdout.write(t);
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: {
        output: { type: 'string', short: 'o' },
        file: { type: 'string', short: 'f' },
        site: { type: 'string' },
        where: { type: 'string' },
        fields: { type: 'string' },
        username: { type: 'string', short: 'u' },
        'password-stdin': { type: 'boolean' },
        'dry-run': { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      allowPositionals: true,
      strict: true,
    });
  } catch (e) {
    // Node's message without its code (ERR_PARSE_ARGS_UNKNOWN_OPTION: ...), which says nothing to a user.
    const text = e instanceof Error ? e.message : String(e);
    const message = text.split('. ')[0] ?? text;
    err(`edgeplane ctl: ${message}\n(edgeplane ctl --help lists verbs and flags)\n`);
    return 2;
  }
  const flags = parsed.values as Flags;
  const [name, ...given] = parsed.positionals;
  if (flags.help || name === undefined || name === 'help') {
    (name === undefined && !flags.help ? err : out)(ctlUsage);
    return name === undefined && !flags.help ? 2 : 0;
  }
  const verb = verbs[name];
  if (!verb) {
    err(`edgeplane ctl: unknown verb ${JSON.stringify(name)}\n(edgeplane ctl --help lists the verbs)\n`);
    return 2;
  }
  for (const f of Object.keys(flags) as Array<keyof Flags>) {
    if (f !== 'help' && !verb.flags.includes(f)) {
      err(`edgeplane ctl ${name}: --${f} does not apply to ${name}\n`);
      return 2;
    }
  }
  // `get volga webhooks` as supctl users type it: one path of the elements.
  const args = verb.path && given.length > 1 ? [given.join('/')] : given;
  const [min, max] = verb.args;
  if (args.length < min || args.length > max) {
    err(
      `edgeplane ctl ${name}: expected ${min === max ? min : `${min} to ${max}`} argument(s), got ${args.length}${args.length ? ` (${args.join(' ')})` : ''}\n`,
    );
    return 2;
  }
  try {
    return await verb.run({ args, flags, client: client(env), env, out, err });
  } catch (e) {
    err(`edgeplane ctl ${name}: ${errorText(e)}\n`);
    return e instanceof CliError ? e.code : 1;
  }
}
