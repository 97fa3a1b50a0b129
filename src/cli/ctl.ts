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
import { errorText } from '../lib/error-text.js';

export const ctlUsage = `Usage: edgeplane ctl <verb> [arguments] [flags]

Talks to EDGEPLANE_URL (default http://127.0.0.1:4646) with the token of \`ctl login\`
(kept in ~/.config/edgeplane/credentials, mode 0600; EDGEPLANE_CREDENTIALS names another file).
A path is /v1/config/..., config/..., state/..., or just sites/a (configuration).

Verbs:
  login [-u admin]                  log in (password from EDGEPLANE_PASSWORD, --password-stdin or a prompt)
  logout                            forget the token of this server
  get <path>                        read (-o yaml|json|table, --where, --fields, --site for state)
  create <list-path> -f FILE        create the object of FILE in a list (POST)
  replace <path> -f FILE            replace an object (PUT)
  merge <path> -f FILE              merge FILE into an object (PATCH)
  delete <path>                     delete an object
  apply -f FILE                     create or replace every object of FILE (the shape of ctl get /v1/config)
  diff -f FILE                      what apply would change; exit 0 when nothing, 1 when something
  watch <path>                      print the objects, then each change (--where, --fields, -o json|yaml)
  produce <topic> [JSON|-f FILE]    produce one message (the payload)
  restart <webhook>                 restart a webhook exporter
  top                               live table of the exporters (q to quit)

Flags: -o, --output yaml|json|table   -f, --file FILE (- for stdin)   --site NAME
       --where EXPR   --fields LIST   -u, --username NAME   --password-stdin   -h, --help
`;

/** Flags each verb accepts besides --help (others are a usage error naming them). */
const verbs: Record<string, { run: (v: Verb) => Promise<number>; flags: Array<keyof Flags>; args: [number, number] }> =
  {
    login: { run: login, flags: ['username', 'password-stdin'], args: [0, 0] },
    logout: { run: logout, flags: [], args: [0, 0] },
    get: { run: get, flags: ['output', 'site', 'where', 'fields'], args: [0, 1] },
    create: { run: create, flags: ['file', 'output'], args: [1, 1] },
    replace: { run: replace, flags: ['file'], args: [1, 1] },
    merge: { run: merge, flags: ['file'], args: [1, 1] },
    delete: { run: del, flags: [], args: [1, 1] },
    apply: { run: apply, flags: ['file'], args: [0, 0] },
    diff: { run: diff, flags: ['file'], args: [0, 0] },
    watch: { run: watch, flags: ['output', 'site', 'where', 'fields'], args: [1, 1] },
    produce: { run: produce, flags: ['file'], args: [1, 2] },
    restart: { run: restart, flags: [], args: [1, 1] },
    top: { run: top, flags: ['site'], args: [0, 0] },
  };

export async function runCtl(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
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
        help: { type: 'boolean', short: 'h' },
      },
      allowPositionals: true,
      strict: true,
    });
  } catch (e) {
    const text = errorText(e);
    const message = text.split('. ')[0] ?? text;
    err(`edgeplane ctl: ${message}\n(edgeplane ctl --help lists verbs and flags)\n`);
    return 2;
  }
  const flags = parsed.values as Flags;
  const [name, ...args] = parsed.positionals;
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
