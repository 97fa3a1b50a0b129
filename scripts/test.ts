/**
 * `npm test`: runs every
 * test file (test/, any depth, name ending .test.ts) in its own Node process beside its own
 * real redis-server (REDIS_TEST_URL; files never share a database), and ends with one plain line
 * `N passed, N failed` summed over every suite (uvu's own summary is not read by CI).
 * Before the suites (when no filter is given) it runs the whole-tree checks below, one test each.
 * Usage: npm test [-- filter]   (only files whose path contains the filter; checks skipped)
 */
import { spawn } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { startRedis } from '../test/helpers/redis.js';

function findTests(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...findTests(p));
    else if (name.endsWith('.test.ts')) out.push(p);
  }
  return out;
}

type Result = {
  file: string;
  passed: number;
  failed: number;
  skipped: number;
  code: number | null;
  output: string;
  ms: number;
};

function runFile(file: string, env: NodeJS.ProcessEnv): Promise<Result> {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', file], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => {
      output += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      output += d.toString();
    });
    const timer = setTimeout(() => {
      output += '\n[test runner] timed out after 600 s\n';
      child.kill('SIGKILL');
    }, 600_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      const plain = output.replace(/\x1b\[[0-9;]*m/g, '');
      const num = (label: string) =>
        [...plain.matchAll(new RegExp(`^\\s*${label}:\\s+(\\d+)`, 'gm'))].reduce((s, m) => s + Number(m[1]), 0);
      const total = num('Total');
      let passed = num('Passed');
      const skipped = num('Skipped');
      // uvu's Total counts the tests that ran: skipped ones (test.skip, or outside .only) are not in it.
      let failed = total - passed;
      // A file that crashed or exited non-zero without a failing count still fails once.
      if (code !== 0 && failed === 0) failed = 1;
      if (total === 0 && code === 0) {
        failed = 1;
        output += '\n[test runner] no test ran in this file\n';
        passed = 0;
      }
      resolve({ file, passed, failed, skipped, code, output, ms: Date.now() - started });
    });
  });
}

/** A whole-tree check (formatting, types) counted as one test: passed when the command exits 0. */
function runCheck(name: string, args: string[]): Promise<Result> {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('close', (code) => {
      const ok = code === 0;
      resolve({
        file: name,
        passed: ok ? 1 : 0,
        failed: ok ? 0 : 1,
        skipped: 0,
        code,
        output,
        ms: Date.now() - started,
      });
    });
  });
}

/** Checks that run before the suites when no filter is given. */
const CHECKS: [string, string[]][] = [
  ['check: formatting (prettier --check)', ['node_modules/prettier/bin/prettier.cjs', '--check', '.']],
  ['check: types (tsc --noEmit)', ['node_modules/typescript/bin/tsc', '--noEmit', '-p', '.']],
  ['check: layers (scripts/check-layers.ts)', ['--import', 'tsx', 'scripts/check-layers.ts']],
  // No function over 100 lines (classes are reported, not failed).
  [
    'check: function length (scripts/long-functions.ts --check)',
    ['--import', 'tsx', 'scripts/long-functions.ts', '--check'],
  ],
  // Type-aware: no-floating-promises and no-misused-promises (eslint.config.js).
  ['check: promises (eslint)', ['node_modules/eslint/bin/eslint.js', '--max-warnings', '0', '.']],
  // Unused files, exports and dependencies; exceptions in knip.jsonc, each with its reason.
  ['check: unused code (knip)', ['node_modules/knip/bin/knip.js', '--no-progress']],
];

function report(r: Result): void {
  const mark = r.failed > 0 ? 'FAIL' : 'ok  ';
  process.stdout.write(
    `${mark} ${r.file.startsWith('check:') ? r.file : relative('.', r.file)}: ${r.passed} passed, ${r.failed} failed${r.skipped ? `, ${r.skipped} skipped` : ''} (${(r.ms / 1000).toFixed(1)} s)\n`,
  );
  if (r.failed > 0)
    process.stdout.write(
      r.output
        .split('\n')
        .map((l) => '    ' + l)
        .join('\n') + '\n',
    );
}

async function main(): Promise<void> {
  const filter = process.argv[2];
  const files = findTests('test').filter((f) => !filter || f.includes(filter));
  const env = { ...process.env, LOG_LEVEL: process.env.LOG_LEVEL ?? 'error', FORCE_COLOR: '0' };
  const results: Result[] = [];
  if (!filter) {
    const checks = await Promise.all(CHECKS.map(([name, args]) => runCheck(name, args)));
    for (const r of checks) {
      results.push(r);
      report(r);
    }
  }
  // Two files at a time: the machine has two cores.
  const queue = [...files];
  const workers = Array.from({ length: 2 }, async () => {
    for (let f = queue.shift(); f; f = queue.shift()) {
      const redis = await startRedis();
      const r = await runFile(f, { ...env, REDIS_TEST_URL: redis.url });
      await redis.dispose();
      results.push(r);
      report(r);
    }
  });
  await Promise.all(workers);
  const passed = results.reduce((s, r) => s + r.passed, 0);
  const failed = results.reduce((s, r) => s + r.failed, 0);
  const skipped = results.reduce((s, r) => s + r.skipped, 0);
  process.stdout.write(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}\n`);
  process.exit(failed > 0 ? 1 : 0);
}

main().catch((err: unknown) => {
  process.stderr.write(`test runner failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.stdout.write('0 passed, 1 failed\n');
  process.exit(1);
});
