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
 * - The README runs as written, ports included: the session runs in a network namespace of its
 *   own (`unshare --net --pid`: only its own loopback, so the README's fixed ports — 4646,
 *   6379, the fleet's and the rollout's — never meet another process's, and everything it
 *   started dies with it). `/tmp/` becomes a directory of this run (two runs at once do not
 *   share DATA_DIRs), HOME too (`ctl login` writes its credentials there), and the working
 *   directory is a copy of the checkout made of symlinks (files a block writes stay there).
 *   A background block's server is waited for on the README's port 4646 (`/readyz`).
 * - Success: no command of a `sh` block fails (bash's ERR trap; a failure the line documents
 *   with `exit N` in its comment is expected), no `curl` gets no answer, and no `curl` gets a
 *   4xx/5xx status the block does not mention; `curl -f` (a poll) is the block's own business.
 *   A `console` block runs its `$ ` lines and its output must match the lines shown (`...` is
 *   any text). Every block is bounded in time.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ensureRedisInstalled } from '../helpers/redis.js';

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
  assert.ok(notRun.length <= 10, `${notRun.length} blocks not run: ${notRun.map((b) => b.line).join(', ')}`);
  assert.ok(blocks.length - notRun.length >= 20, 'most blocks run');
});

type Session = { root: string; dir: string; home: string; tmp: string; rewrite(text: string): string };

function newSession(): Session {
  const dir = mkdtempSync(join(tmpdir(), 'edgeplane-readme-'));
  const work = join(dir, 'work');
  const tmp = join(dir, 'tmp');
  const home = join(dir, 'home');
  for (const d of [work, tmp, home]) mkdirSync(d);
  // The checkout, as symlinks: a block's `node build/edgeplane.cjs` and `npm start` work, and
  // what it writes (desired.yaml, ./data) stays in this run's directory.
  for (const name of readdirSync('.'))
    if (!['data', '.git'].includes(name)) symlinkSync(join(process.cwd(), name), join(work, name));
  return { root: dir, dir: work, home, tmp, rewrite: (text) => text.replace(/\/tmp\//g, tmp + '/') };
}

/**
 * Each block's bound. The fleet and rollout walkthroughs take 35–70 s on a 2-core machine
 * loaded 25 deep (their waves and waits are real time); a block past this bound fails.
 */
const BLOCK_MS = 240_000;

const ERR_TRAP = `trap 'echo "__EP_ERR__ $? $LINENO $BASH_COMMAND"' ERR`;

/** Defined before the first block: the loopback, what records failures, the server helpers. */
function prelude(s: Session): string {
  return [
    'exec 2>&1',
    'ip link set lo up',
    'shopt -s expand_aliases',
    'set -E',
    ERR_TRAP,
    `export HOME=${s.home} LOG_LEVEL=warn`,
    // A poll (`curl -f`) is not checked; every other answer is recorded on stderr (= stdout here).
    `curl() { case " $* " in *" -sf "*|*" -f "*|*" --fail "*|*" -sfS "*) command curl "$@"; return;; esac;`,
    `  command curl -w '%{stderr}\\n__EP_HTTP__ %{http_code} %{url_effective}\\n' "$@"; }`,
    'export -f curl',
    // A background block: its own session (process group), stopped by the next one.
    'ep_stop_server() { if [ -n "$EP_SERVER" ]; then kill -TERM -- -$EP_SERVER 2>/dev/null || true; wait $EP_SERVER 2>/dev/null || true; EP_SERVER=; fi; }',
    'ep_start_server() {',
    '  ep_stop_server; setsid bash --noprofile --norc "$1" > "$2" 2>&1 < /dev/null & EP_SERVER=$!',
    '  until command curl -sf http://127.0.0.1:4646/readyz > /dev/null; do',
    '    if ! kill -0 $EP_SERVER 2>/dev/null; then echo "__EP_ERR__ 1 1 the server exited"; tail -20 "$2"; return 1; fi',
    '    sleep 0.2',
    '  done',
    '}',
    `cd ${s.dir}`,
  ].join('\n');
}

/** One bash process fed block after block; each block's output comes back with its end marker. */
function startShell(scripts: string): { child: ChildProcess; run(script: string, ms: number): Promise<string> } {
  const child = spawn(
    'unshare',
    ['--map-root-user', '--net', '--pid', '--fork', '--mount-proc', '--kill-child', 'bash', '--noprofile', '--norc'],
    { stdio: ['pipe', 'pipe', 'pipe'] },
  );
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
      const file = join(scripts, `block-${id}.sh`);
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
  const tmp = s.tmp;
  return readdirSync(tmp)
    .filter((f) => f.endsWith('.log'))
    .map((f) => `--- ${f} ---\n${readFileSync(join(tmp, f), 'utf8').slice(-1500)}`)
    .join('\n');
}

test('every runnable block of the README succeeds as written', async () => {
  ensureRedisInstalled();
  const s = newSession();
  const shell = startShell(s.tmp);
  const failures: string[] = [];
  const timings: string[] = [];
  try {
    await shell.run(prelude(s), 10_000);
    for (const block of blocks) {
      if (block.marker?.kind === 'not run') continue;
      const where = `README.md:${block.line}`;
      const started = Date.now();
      let out: string;
      try {
        if (block.marker?.kind === 'runs in the background') {
          const file = join(s.tmp, `server-${block.line}.sh`);
          writeFileSync(file, s.rewrite(block.text) + '\n');
          out = await shell.run(`ep_start_server ${file} ${file}.log`, BLOCK_MS);
        } else if (block.lang === 'console') {
          const { commands, expected } = consoleParts(block.text);
          out = await shell.run(`trap - ERR\n${s.rewrite(commands)}\n${ERR_TRAP}`, 60_000);
          const got = out.split('\n');
          let at = 0;
          for (const re of expected) {
            while (at < got.length && !re.test(got[at]!)) at++;
            if (at === got.length) failures.push(`${where}: no output line matches ${re}\n${out}`);
          }
          continue;
        } else {
          out = await shell.run(s.rewrite(block.text), BLOCK_MS);
        }
        timings.push(`${where} ${Date.now() - started} ms`);
      } catch (err) {
        failures.push(`${where}: ${err instanceof Error ? err.message : String(err)}\n${logsOf(s)}`);
        break; // the shell is stuck in that block
      }
      const problems = problemsOf(block, out);
      if (problems.length > 0) failures.push(`${where}:\n  ${problems.join('\n  ')}\n--- output ---\n${out}`);
    }
  } finally {
    // The namespace's first process: everything the blocks started (daemonized Redis too) ends with it.
    shell.child.kill('SIGKILL');
  }
  console.log(`README blocks run: ${timings.join(', ')}`);
  try {
    assert.equal(failures, [], failures.join('\n\n') + `\n${logsOf(s)}`);
  } finally {
    // The run's directory (the checkout in it is symlinks, which rm does not follow).
    rmSync(s.root, { recursive: true, force: true, maxRetries: 5 });
  }
});

test.run();
