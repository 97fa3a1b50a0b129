/**
 * scripts/long-functions.ts, run on small source trees in a temp dir: with --check, a function
 * over the limit fails the run (exit 1) whatever its kind (declaration, method, callback), and
 * names it; a long class made of short methods is listed for information and passes; without
 * --check the same tree is reported and the run exits 0.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'uvu';
import * as assert from 'uvu/assert';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const dirs: string[] = [];

/** `n` statements, one a line. */
const body = (n: number) => Array.from({ length: n }, (_, i) => `  const v${i} = ${i};`).join('\n');

function run(files: Record<string, string>, ...flags: string[]): { code: number | null; out: string } {
  const dir = mkdtempSync(join(tmpdir(), 'long-functions-'));
  dirs.push(dir);
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/long-functions.ts', ...flags, dir], {
    cwd: repo,
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { code: r.status, out: r.stdout + r.stderr };
}

// 98 statements + the two lines of the braces: exactly 100 lines, the limit.
const atLimit = `export function short() {\n${body(98)}\n}\n`;
const overLimit = `export function long() {\n${body(99)}\n}\n`;
const longMethod = `export class A {\n  m() {\n${body(99)}\n  }\n}\n`;
const longCallback = `export const xs = [1].map((x) => {\n${body(99)}\n  return x;\n});\n`;
const shortMethods = (n: number) =>
  `export class Parser {\n${Array.from({ length: n }, (_, i) => `  m${i}() {\n    return ${i};\n  }`).join('\n')}\n}\n`;

test('--check: a function at the limit passes; over it, a declaration, a method or a callback fails', () => {
  const ok = run({ 'a.ts': atLimit }, '--check');
  assert.is(ok.code, 0, ok.out);
  assert.match(ok.out, /0 functions/);
  // One tree, one run: each kind is named on its own line.
  const r = run({ 'b.ts': overLimit, 'c.ts': longMethod, 'd.ts': longCallback }, '--check');
  assert.is(r.code, 1, r.out);
  assert.match(r.out, /functions over 100 lines/);
  assert.match(r.out, /b\.ts:1 {2}long$/m);
  assert.match(r.out, /c\.ts:2 {2}m$/m);
  assert.match(r.out, /d\.ts:1 {2}\(callback of \[1\]\.map\)$/m);
  assert.match(r.out, /3 functions \(failures\)/);
});

test('--check: a long class of short methods is information only; without --check nothing fails', () => {
  const r = run({ 'p.ts': shortMethods(40) }, '--check');
  assert.is(r.code, 0, r.out);
  assert.match(r.out, /class Parser/);
  assert.match(r.out, /0 functions \(none\) and 1 classes \(information\)/);
  const report = run({ 'b.ts': overLimit });
  assert.is(report.code, 0, report.out);
  assert.match(report.out, /1 functions \(failures\)/);
});

test('--limit moves the limit', () => {
  const r = run({ 'a.ts': atLimit }, '--check', '--limit', '50');
  assert.is(r.code, 1, r.out);
});

test.after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

test.run();
