/**
 * The README as written: every fenced `sh`/`bash`/`console` block of README.md runs, in
 * order, in ONE bash session as a user pasting the README would (variables, functions and
 * files carry from block to block), and must succeed. A block added to the README is picked
 * up without changing this file.
 *
 * - A line just above a block (blank lines between allowed) may mark it, visibly:
 *   `*README test: not run — <why>.*` (it cannot run on loopback, or never ends) or
 *   `*README test: runs in the background — <why>.*` (a server: the test starts the block as
 *   written in the background, waits until `/readyz` on the README's port answers 200, and
 *   stops it at the next background block or at the end). A marker needs a reason.
 * - What the README assumes of the machine is given to it on loopback: every fixed port the
 *   README names (`4646`, the fleet's `47xx`, Redis's `63xx`/`64xx`/`26xxx`) becomes a free
 *   port of this run, `/tmp/` a directory of this run, the working directory is a copy of the
 *   checkout made of symlinks (files a block writes stay there), and `redis-cli` talks to the
 *   port the README's `6379` became unless the block names another (`-p`).
 * - Success: no command of a `sh` block fails (bash's ERR trap; a failure the line documents
 *   with `exit N` in its comment is expected), no `curl` gets no answer, and no `curl` gets a
 *   4xx/5xx status the block does not mention; `curl -f` (a poll) is the block's own business.
 *   A `console` block runs its `$ ` lines and its output must match the lines shown (`...` is
 *   any text). Every block is bounded in time.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ensureRedisInstalled, freePort } from '../helpers/redis.js';
import { eventually } from '../helpers/wait.js';

type Marker = { kind: 'not run' | 'runs in the background'; reason: string };
type Block = { line: number; lang: string; text: string; marker?: Marker };

const MARKER = /^\*README test: (not run|runs in the background) — (.+)\*$/;
const RUNNABLE = new Set(['sh', 'bash', 'shell', 'console']);

/** The fenced blocks of a Markdown text (top-level and indented), with the marker above each. */
export function readmeBlocks(markdown: string): Block[] {
  const lines = markdown.split('\n');
  const out: Block[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```(\S*)\s*$/.exec(lines[i]!);
    if (!open) continue;
    const indent = open[1]!.length;
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length && !/^\s*```\s*$/.test(lines[j]!); j++) body.push(lines[j]!.slice(indent));
    let k = i - 1;
    while (k >= 0 && lines[k]!.trim() === '') k--;
    const m = k >= 0 ? MARKER.exec(lines[k]!.trim()) : null;
    out.push({
      line: i + 1,
      lang: open[2]!,
      text: body.join('\n'),
      ...(m ? { marker: { kind: m[1] as Marker['kind'], reason: m[2]! } } : {}),
    });
    i = j;
  }
  return out;
}

const README = readFileSync('README.md', 'utf8');
const blocks = readmeBlocks(README).filter((b) => RUNNABLE.has(b.lang));

test('every marker of the README gives its reason, and few blocks are left out', () => {
  for (const b of blocks.filter((x) => x.marker))
    assert.ok((b.marker?.reason.length ?? 0) >= 10, `README.md:${b.line}: a marker needs a reason`);
  const notRun = blocks.filter((b) => b.marker?.kind === 'not run');
  assert.ok(notRun.length <= 8, `${notRun.length} blocks not run: ${notRun.map((b) => b.line).join(', ')}`);
  assert.ok(blocks.length - notRun.length >= 20, 'most blocks run');
});

/** Fixed ports the README names: each becomes a free port of this run. */
const FIXED_PORT = /\b(4646|47[0-9]{2}|63[0-9]{2}|64[0-9]{2}|26[0-9]{3})\b/g;

type Session = {
  dir: string;
  ports: Map<string, string>;
  rewrite(text: string): string;
};

async function newSession(): Promise<Session> {
  const dir = mkdtempSync(join(tmpdir(), 'edgeplane-readme-'));
  const work = join(dir, 'work');
  mkdirSync(work);
  mkdirSync(join(dir, 'tmp'));
  // The checkout, as symlinks: a block's `node build/edgeplane.cjs` and `npm start` work, and
  // what it writes (desired.yaml, ./data) stays in this run's directory.
  for (const name of readdirSync('.'))
    if (!['data', '.git'].includes(name)) symlinkSync(join(process.cwd(), name), join(work, name));
  const ports = new Map<string, string>();
  const taken = new Set<string>();
  const another = async (): Promise<string> => {
    for (;;) {
      const p = String(await freePort());
      if (!taken.has(p)) {
        taken.add(p);
        return p;
      }
    }
  };
  for (const b of blocks)
    for (const m of b.text.matchAll(FIXED_PORT)) if (!ports.has(m[1]!)) ports.set(m[1]!, await another());
  if (!ports.has('6379')) ports.set('6379', await another());
  return {
    dir: work,
    ports,
    rewrite: (text) => text.replace(FIXED_PORT, (p) => ports.get(p) ?? p).replace(/\/tmp\//g, join(dir, 'tmp') + '/'),
  };
}

/** Defined before the first block: what records failures, and redis-cli on this run's Redis. */
function prelude(s: Session): string {
  return [
    'exec 2>&1',
    'shopt -s expand_aliases',
    'set -E',
    `trap 'echo "__EP_ERR__ $? $LINENO $BASH_COMMAND"' ERR`,
    `redis-cli() { command redis-cli -p ${s.ports.get('6379')} "$@"; }`,
    // A poll (`curl -f`) is not checked; every other answer is recorded on stderr (= stdout here).
    `curl() { case " $* " in *" -sf "*|*" -f "*|*" --fail "*|*" -sfS "*) command curl "$@"; return;; esac;`,
    `  command curl -w '%{stderr}\\n__EP_HTTP__ %{http_code} %{url_effective}\\n' "$@"; }`,
    'export -f curl redis-cli',
    `cd ${s.dir}`,
  ].join('\n');
}

/** One bash process fed block after block; each block's output comes back with its end marker. */
function startShell(): { child: ChildProcess; run(script: string, ms: number): Promise<string> } {
  const child = spawn('bash', ['--noprofile', '--norc'], { stdio: ['pipe', 'pipe', 'pipe'], detached: true });
  let out = '';
  let waiter: (() => void) | undefined;
  const onData = (d: Buffer) => {
    out += d.toString();
    waiter?.();
  };
  child.stdout?.on('data', onData);
  child.stderr?.on('data', onData);
  let n = 0;
  return {
    child,
    run(script, ms) {
      const id = ++n;
      const file = join(tmpdir(), `edgeplane-readme-${process.pid}-${id}.sh`);
      writeFileSync(file, script + '\n');
      const end = `__EP_DONE__ ${id}`;
      const from = out.length;
      child.stdin?.write(`source ${file} < /dev/null; echo "${end} $?"\n`);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiter = undefined;
          reject(new Error(`timed out after ${ms} ms; output so far:\n${out.slice(from)}`));
        }, ms);
        waiter = () => {
          const at = out.indexOf(end, from);
          if (at < 0) return;
          clearTimeout(timer);
          waiter = undefined;
          resolve(out.slice(from, at));
        };
        waiter();
      });
    },
  };
}

/** What went wrong in a `sh` block's output (empty: it succeeded). */
export function problemsOf(block: Block, output: string): string[] {
  const problems: string[] = [];
  const lines = block.text.split('\n');
  for (const m of output.matchAll(/^__EP_ERR__ (\d+) (\d+) (.*)$/gm)) {
    const [, status, line, command] = m;
    const source = lines[Number(line) - 1] ?? '';
    if (new RegExp(`exit ${status}\\b`).test(source)) continue;
    problems.push(`line ${Number(line)} exited ${status}: ${command}`);
  }
  for (const m of output.matchAll(/^__EP_HTTP__ (\d{3}) (\S*)$/gm)) {
    const status = m[1]!;
    if (status === '000') problems.push(`no answer from ${m[2]}`);
    else if (Number(status) >= 400 && !new RegExp(`\\b${status}\\b`).test(block.text))
      problems.push(`HTTP ${status} from ${m[2]}, which the block does not mention`);
  }
  return problems;
}

/** A `console` block: its `$ ` commands, and the output lines shown (with `...` as any text). */
function consoleParts(text: string): { commands: string; expected: RegExp[] } {
  const commands: string[] = [];
  const expected: RegExp[] = [];
  for (const line of text.split('\n')) {
    if (line.startsWith('$ ')) commands.push(line.slice(2));
    else if (line.trim() !== '')
      expected.push(
        new RegExp(
          '^' +
            line
              .split('...')
              .map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
              .join('.*') +
            '$',
        ),
      );
  }
  return { commands: commands.join('\n'), expected };
}

/** The tails of the log files the blocks wrote under this run's /tmp (a stuck block's servers). */
function logsOf(s: Session): string {
  const tmp = join(s.dir, '..', 'tmp');
  return readdirSync(tmp)
    .filter((f) => f.endsWith('.log'))
    .map((f) => `--- ${f} ---\n${readFileSync(join(tmp, f), 'utf8').slice(-1500)}`)
    .join('\n');
}

type Server = { child: ChildProcess; block: Block };

function stopServer(server: Server | undefined): Promise<void> {
  if (!server || server.child.exitCode !== null) return Promise.resolve();
  return new Promise((done) => {
    const timer = setTimeout(() => {
      try {
        process.kill(-(server.child.pid as number), 'SIGKILL');
      } catch {
        // gone already
      }
    }, 10_000);
    server.child.once('exit', () => {
      clearTimeout(timer);
      done();
    });
    try {
      process.kill(-(server.child.pid as number), 'SIGTERM');
    } catch {
      done();
    }
  });
}

async function startServer(s: Session, block: Block, log: string[]): Promise<Server> {
  const script = `${prelude(s)}\n${s.rewrite(block.text)}`;
  const child = spawn('bash', ['--noprofile', '--norc', '-c', script], {
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
    env: { ...process.env, PORT: s.ports.get('4646') as string, HOST: '127.0.0.1', LOG_LEVEL: 'warn' },
  });
  child.stdout?.on('data', (d: Buffer) => log.push(d.toString()));
  child.stderr?.on('data', (d: Buffer) => log.push(d.toString()));
  const url = `http://127.0.0.1:${s.ports.get('4646')}/readyz`;
  await eventually(
    async () => {
      if (child.exitCode !== null)
        throw new Error(`README.md:${block.line} exited ${child.exitCode}:\n${log.join('')}`);
      return (await fetch(url).catch(() => undefined))?.status === 200;
    },
    `the server of README.md:${block.line} ready`,
    { timeoutMs: 60_000, everyMs: 200 },
  );
  return { child, block };
}

test('every runnable block of the README succeeds as written', async () => {
  ensureRedisInstalled();
  const s = await newSession();
  const shell = startShell();
  const failures: string[] = [];
  let server: Server | undefined;
  const serverLog: string[] = [];
  const timings: string[] = [];
  try {
    await shell.run(prelude(s), 10_000);
    for (const block of blocks) {
      if (block.marker?.kind === 'not run') continue;
      const where = `README.md:${block.line}`;
      if (block.marker?.kind === 'runs in the background') {
        await stopServer(server);
        server = await startServer(s, block, serverLog);
        continue;
      }
      if (block.lang === 'console') {
        const { commands, expected } = consoleParts(block.text);
        const out = await shell.run(
          `trap - ERR\n${s.rewrite(commands)}\ntrap 'echo "__EP_ERR__ $? $LINENO $BASH_COMMAND"' ERR`,
          60_000,
        );
        const got = out.split('\n');
        let at = 0;
        for (const re of expected) {
          while (at < got.length && !re.test(got[at]!)) at++;
          if (at === got.length) failures.push(`${where}: no output line matches ${re}\n${out}`);
        }
        continue;
      }
      let out: string;
      const started = Date.now();
      try {
        out = await shell.run(s.rewrite(block.text), 90_000);
        timings.push(`${where} ${Date.now() - started} ms`);
      } catch (err) {
        failures.push(`${where}: ${err instanceof Error ? err.message : String(err)}\n${logsOf(s)}`);
        break; // the shell is stuck in that block
      }
      const problems = problemsOf(block, out);
      if (problems.length > 0) failures.push(`${where}:\n  ${problems.join('\n  ')}\n--- output ---\n${out}`);
    }
  } finally {
    await stopServer(server);
    try {
      process.kill(-(shell.child.pid as number), 'SIGKILL');
    } catch {
      // gone already
    }
    // Redis servers the blocks started (daemonized): by the ports they were given.
    for (const b of blocks)
      for (const m of b.text.matchAll(/redis-server --port (\d+)/g))
        spawnSync('redis-cli', ['-p', s.ports.get(m[1]!) ?? m[1]!, 'shutdown', 'nosave'], { timeout: 5000 });
    for (const m of README.matchAll(/^port (\d+)|for p in ([\d ]+);/gm))
      for (const p of (m[1] ?? m[2] ?? '').split(' ').filter(Boolean))
        spawnSync('redis-cli', ['-p', s.ports.get(p) ?? p, 'shutdown', 'nosave'], { timeout: 5000 });
  }
  console.log(`README blocks run: ${timings.join(', ')}`);
  assert.equal(failures, [], failures.join('\n\n') + `\n--- server log ---\n${serverLog.join('').slice(-4000)}`);
});

test.run();
