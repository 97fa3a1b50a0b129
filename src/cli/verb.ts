/** What every verb of `edgeplane ctl` (ctl.ts) is given, and reading its -f input. */
import { readFileSync } from 'node:fs';
import { CliError, type Client } from './client.js';
import { errorText } from '../lib/error-text.js';

export type Flags = {
  output?: string;
  file?: string;
  site?: string;
  where?: string;
  fields?: string;
  username?: string;
  'password-stdin'?: boolean;
  help?: boolean;
};

export type Verb = {
  args: string[];
  flags: Flags;
  client: Client;
  env: NodeJS.ProcessEnv;
  out: (text: string) => void;
  err: (text: string) => void;
};

/** The text of -f FILE (or stdin for -), and its content type. */
export function readInput(file: string | undefined, verb: string): { text: string; type: string } {
  if (file === undefined) throw new CliError(`${verb}: give the object with -f FILE (- for stdin)`, 2);
  let text: string;
  try {
    text = readFileSync(file === '-' ? 0 : file, 'utf8');
  } catch (e) {
    throw new CliError(`${verb}: cannot read ${file}: ${errorText(e)}`, 2);
  }
  const t = text.trimStart();
  return { text, type: t.startsWith('{') || t.startsWith('[') ? 'application/json' : 'application/yaml' };
}
