/** `ctl login` and `ctl logout`: the token of one server in the credentials file (mode 0600). */
import { readFileSync } from 'node:fs';
import { CliError, credentialsPath, ok, readCredentials, writeCredentials } from './client.js';
import type { Verb } from './verb.js';

/** Reads a line from the terminal without echoing it. */
function prompt(question: string): Promise<string> {
  const stdin = process.stdin;
  if (!stdin.isTTY) throw new CliError('login: no password: set EDGEPLANE_PASSWORD or use --password-stdin', 2);
  process.stderr.write(question);
  return new Promise((resolve) => {
    let text = '';
    stdin.setRawMode(true);
    stdin.resume();
    const onData = (d: Buffer) => {
      for (const ch of d.toString('utf8')) {
        if (ch === '\r' || ch === '\n' || ch === '\u0004') {
          stdin.setRawMode(false);
          stdin.pause();
          stdin.off('data', onData);
          process.stderr.write('\n');
          return resolve(text);
        }
        if (ch === '\u0003') {
          stdin.setRawMode(false);
          process.stderr.write('\n');
          process.exit(130);
        }
        if (ch === '\u007f') text = text.slice(0, -1);
        else text += ch;
      }
    };
    stdin.on('data', onData);
  });
}

export async function login(v: Verb): Promise<number> {
  const username = v.flags.username ?? 'admin';
  const password = v.flags['password-stdin']
    ? readFileSync(0, 'utf8').replace(/\r?\n$/, '')
    : (v.env.EDGEPLANE_PASSWORD ?? (await prompt(`password of ${username} at ${v.client.url}: `)));
  const res = await ok(
    await v.client.request('POST', '/v1/login', { body: JSON.stringify({ username, password }) }),
    'login',
  );
  const body = (await res.json()) as { token?: string; expires?: string };
  if (typeof body.token !== 'string') throw new CliError('login: the server answered no token');
  const path = credentialsPath(v.env);
  const creds = readCredentials(path);
  creds[v.client.url] = { token: body.token, username, ...(body.expires ? { expires: body.expires } : {}) };
  writeCredentials(creds, path);
  v.err(
    `logged in to ${v.client.url} as ${username}${body.expires ? ` until ${body.expires}` : ''} (token in ${path})\n`,
  );
  return 0;
}

export async function logout(v: Verb): Promise<number> {
  const path = credentialsPath(v.env);
  const creds = readCredentials(path);
  const had = v.client.url in creds;
  delete creds[v.client.url];
  writeCredentials(creds, path);
  v.err(had ? `logged out of ${v.client.url}\n` : `no token for ${v.client.url}\n`);
  return 0;
}
