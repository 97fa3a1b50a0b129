/**
 * One process per embedded DATA_DIR, with real processes: a second one refuses to start
 * (exit 1, one line naming DATA_DIR and the holder's pid); a lock left by a process killed
 * with kill -9 does not block the next start; of five processes taking the lock at the same
 * instant exactly one holds it, also when a stale lock is there.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { lockDataDir } from '../../src/main/data-dir.js';
import { startServe } from '../helpers/serve-proc.js';

const env = (dataDir: string) => ({ PORT: '0', DATA_DIR: dataDir, ADMIN_PASSWORD: 'lock-test-password' });

test('a second process on the same DATA_DIR refuses to start; a kill -9 leaves no blocking lock', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'edgeplane-lock-'));
  const first = startServe(env(dataDir));
  try {
    await first.listening();
    const second = startServe(env(dataDir));
    assert.is(await second.exited(), 1, second.output());
    const lines = second.lines();
    assert.is(lines.length, 1, second.output());
    assert.is(lines[0]?.setting, 'DATA_DIR');
    assert.match(String(lines[0]?.msg), new RegExp(`in use by another edgeplane process \\(pid ${first.child.pid}\\)`));
    assert.ok(first.child.exitCode === null, 'the first one still runs');

    first.kill('SIGKILL');
    await first.exited();
    assert.ok(existsSync(join(dataDir, 'edgeplane.lock')), 'kill -9 left its lock file behind');
    const third = startServe(env(dataDir));
    try {
      await third.listening();
      third.kill('SIGTERM');
      assert.is(await third.exited(), 0);
      assert.not.ok(existsSync(join(dataDir, 'edgeplane.lock')), 'a normal exit removes the lock');
    } finally {
      third.kill('SIGKILL');
    }
  } finally {
    first.kill('SIGKILL');
  }
});

/** Runs `sh -c script`, resolving to the first line it prints (a pid); the shell keeps running. */
function shellPid(script: string): Promise<{ pid: number; stop: () => void }> {
  const child = spawn('sh', ['-c', script], { stdio: ['ignore', 'pipe', 'ignore'] });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const line = out.split('\n')[0];
      if (out.includes('\n') && line) resolve({ pid: Number(line), stop: () => child.kill('SIGKILL') });
    });
    child.once('exit', () => reject(new Error(`the shell exited before printing a pid: ${out}`)));
  });
}

test('a lock whose owner is a zombie (exited, not yet reaped by its parent) is stale', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'edgeplane-lock-zombie-'));
  // The background sleep exits after its parent has become `sleep 30` (exec), which never reaps
  // it. Not `sleep 0`: exiting before the exec, it could be reaped by the shell itself (its pid
  // then gone from /proc: seen once in CI on a loaded machine).
  const holder = await shellPid('sleep 1 & echo $!; exec sleep 30');
  try {
    let state = '';
    for (let i = 0; i < 200 && state !== 'Z'; i++) {
      await new Promise((r) => setTimeout(r, 50));
      state = readFileSync(`/proc/${holder.pid}/stat`, 'utf8').split(') ')[1]?.[0] ?? '';
    }
    assert.is(state, 'Z', 'the owner is a zombie');
    writeFileSync(join(dataDir, 'edgeplane.lock'), JSON.stringify({ pid: holder.pid }) + '\n');
    const lock = lockDataDir(dataDir);
    assert.equal(JSON.parse(readFileSync(lock.path, 'utf8')).pid, process.pid);
    lock.release();
  } finally {
    holder.stop();
  }
});

test('an owner that is going away is waited for (a few seconds), then its lock is taken', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'edgeplane-lock-dying-'));
  const dying = spawn('sleep', ['1'], { stdio: 'ignore' });
  writeFileSync(join(dataDir, 'edgeplane.lock'), JSON.stringify({ pid: dying.pid }) + '\n');
  // lockDataDir waits synchronously; the child is reaped by this process's event loop only
  // after, so a worker-free check: the child must have exited (zombie or gone) within the wait.
  const lock = lockDataDir(dataDir);
  assert.equal(JSON.parse(readFileSync(lock.path, 'utf8')).pid, process.pid);
  lock.release();
});

test('a lock naming a pid that now belongs to another program (other start time) is stale', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'edgeplane-lock-reuse-'));
  // pid 1 runs, but not the process that wrote this (Linux: its start time in /proc differs).
  writeFileSync(join(dataDir, 'edgeplane.lock'), JSON.stringify({ pid: 1, start: 'another-start' }));
  const lock = lockDataDir(dataDir);
  lock.release();
  assert.not.ok(existsSync(join(dataDir, 'edgeplane.lock')));
});

test('a half-written lock file does not block', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'edgeplane-lock-torn-'));
  writeFileSync(join(dataDir, 'edgeplane.lock'), '{"pi');
  const lock = lockDataDir(dataDir);
  assert.ok(existsSync(lock.path));
  lock.release();
});

/**
 * `count` processes take the lock of `dir` at the same instant (each waits for the same wall
 * time after starting); each prints "held" or "refused". A holder keeps its lock until every
 * process has answered (its stdin closes then), so one that starts late under load still finds
 * the lock held rather than released.
 */
async function race(dir: string, count: number): Promise<string[]> {
  const at = Date.now() + 4000;
  const code = `
    const { lockDataDir } = await import(${JSON.stringify(new URL('../../src/main/data-dir.ts', import.meta.url).href)});
    while (Date.now() < ${at});
    let held = false;
    try { lockDataDir(${JSON.stringify(dir)}); held = true; } catch (err) {}
    console.log(held ? 'held' : 'refused');
    if (held) await new Promise((r) => { process.stdin.on('data', () => {}); process.stdin.on('end', r); });`;
  const children = Array.from({ length: count }, () =>
    spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', code], {
      stdio: ['pipe', 'pipe', 'inherit'],
    }),
  );
  const answers = children.map(
    (child) =>
      new Promise<string>((resolve) => {
        let out = '';
        child.stdout.on('data', (d: Buffer) => {
          out += String(d);
          if (out.includes('\n')) resolve(out.trim());
        });
        child.on('exit', () => resolve(out.trim()));
      }),
  );
  const exits = children.map((child) => new Promise<void>((resolve) => child.on('exit', () => resolve())));
  const timer = setTimeout(() => children.forEach((c) => c.kill('SIGKILL')), 60_000);
  try {
    return await Promise.all(answers);
  } finally {
    children.forEach((c) => c.stdin.end());
    await Promise.all(exits);
    clearTimeout(timer);
  }
}

test('processes starting at the same instant: exactly one holds the lock, with or without a stale lock there', async () => {
  for (const stale of [false, true]) {
    const dataDir = mkdtempSync(join(tmpdir(), 'edgeplane-lock-race-'));
    // A lock left by a process that is gone (a pid above the kernel's limit never runs).
    if (stale) writeFileSync(join(dataDir, 'edgeplane.lock'), JSON.stringify({ pid: 4_194_305 }));
    const results = await race(dataDir, 5);
    assert.is(results.filter((r) => r === 'held').length, 1, `${stale ? 'stale lock' : 'no lock'}: ${results}`);
    assert.is(results.filter((r) => r === 'refused').length, 4, String(results));
    assert.equal(
      readdirSync(dataDir).filter((f) => f !== 'edgeplane.lock'),
      [],
      'no file of a lock attempt is left behind',
    );
  }
});

test.run();
