/**
 * scripts/check-layers.ts, run on small source trees in a temp dir: an import that goes up a
 * layer (a type-only one too), a sideways import between sibling folders (auth/, exporter/ and
 * model/ among them), a circle of files, a file directly in src/, an unlisted folder and, inside
 * fleet/, an import between the control plane's and the site's files or up from common/ each fail
 * naming what is wrong; imports that
 * only go down pass. (`npm test` runs the same script on the real src/ as a check.)
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'uvu';
import * as assert from 'uvu/assert';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const dirs: string[] = [];

/** Writes `files` (path under src/ → text) into a fresh temp tree and runs the checker on it. */
function check(files: Record<string, string>): { code: number | null; out: string } {
  const dir = mkdtempSync(join(tmpdir(), 'check-layers-'));
  dirs.push(dir);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, 'src', path)), { recursive: true });
    writeFileSync(join(dir, 'src', path), text);
  }
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'scripts/check-layers.ts', '--src', join(dir, 'src')], {
    cwd: repo,
    encoding: 'utf8',
    timeout: 60_000,
  });
  return { code: r.status, out: r.stdout + r.stderr };
}

const base = {
  'lib/json.ts': 'export type Json = unknown;\n',
  'model/resources.ts': "import type { Json } from '../lib/json.js';\nexport const r: Json = 1;\n",
  'api/config.ts': "import { r } from '../model/resources.js';\nexport const c = r;\n",
};

test('imports that only go down pass', () => {
  const r = check(base);
  assert.is(r.code, 0, r.out);
  assert.match(r.out, /0 problems \(0 folder cycles, 0 file cycles\)/);
});

test('an import from lib up to model fails, naming the import', () => {
  const r = check({ ...base, 'lib/duration.ts': "import { r } from '../model/resources.js';\nexport const d = r;\n" });
  assert.is(r.code, 1, r.out);
  assert.match(r.out, 'upward import: lib/duration.ts imports model/resources.ts');
});

test('a type-only import up a layer fails too', () => {
  const r = check({
    ...base,
    'model/checks.ts': "import type { c } from '../api/config.js';\nexport type C = typeof c;\n",
  });
  assert.is(r.code, 1, r.out);
  assert.match(r.out, 'upward import: model/checks.ts imports api/config.ts (type)');
});

test('siblings of one layer may not import each other', () => {
  const r = check({
    ...base,
    'ops/probes.ts': 'export const p = 1;\n',
    'fleet/role.ts': "export * from '../ops/probes.js';\n",
  });
  assert.is(r.code, 1, r.out);
  assert.match(r.out, 'sideways import: fleet/role.ts imports ops/probes.ts');
});

test('inside fleet/, the control plane and the site do not import each other, and common/ imports neither', () => {
  const fleet = {
    ...base,
    'fleet/common/protocol.ts': 'export const v = 1;\n',
    'fleet/control/log.ts': "import { v } from '../common/protocol.js';\nexport const l = v;\n",
    'fleet/site/sync.ts': "import { v } from '../common/protocol.js';\nexport const s = v;\n",
    'fleet/role.ts':
      "import { l } from './control/log.js';\nimport { s } from './site/sync.js';\nexport const r = l + s;\n",
  };
  const ok = check(fleet);
  assert.is(ok.code, 0, ok.out);
  const sideways = check({ ...fleet, 'fleet/site/uses-log.ts': "export * from '../control/log.js';\n" });
  assert.is(sideways.code, 1, sideways.out);
  assert.match(sideways.out, 'sideways import: fleet/site/uses-log.ts imports fleet/control/log.ts');
  const upward = check({ ...fleet, 'fleet/common/up.ts': "export * from '../site/sync.js';\n" });
  assert.is(upward.code, 1, upward.out);
  assert.match(upward.out, 'upward import: fleet/common/up.ts imports fleet/site/sync.ts');
});

test('auth/, exporter/ and model/ are siblings: none may import another', () => {
  const tree = {
    ...base,
    'auth/policies.ts': 'export const allow = true;\n',
    'exporter/retry.ts': 'export const delay = 1;\n',
  };
  assert.is(check(tree).code, 0, check(tree).out);
  const cases: [string, string, string][] = [
    [
      'model/write.ts',
      "import { allow } from '../auth/policies.js';\nexport const w = allow;\n",
      'model/write.ts imports auth/policies.ts',
    ],
    [
      'exporter/send.ts',
      "import type { r } from '../model/resources.js';\nexport type S = typeof r;\n",
      'exporter/send.ts imports model/resources.ts (type)',
    ],
    [
      'auth/tokens.ts',
      "import { delay } from '../exporter/retry.js';\nexport const t = delay;\n",
      'auth/tokens.ts imports exporter/retry.ts',
    ],
  ];
  for (const [path, text, named] of cases) {
    const r = check({ ...tree, [path]: text });
    assert.is(r.code, 1, r.out);
    assert.match(r.out, `sideways import: ${named}`);
  }
});

test('a circle of files inside one folder fails', () => {
  const r = check({
    ...base,
    'model/a.ts': "import { b } from './b.js';\nexport const a = () => b;\n",
    'model/b.ts': "import type { a } from './a.js';\nexport const b: typeof a | undefined = undefined;\n",
  });
  assert.is(r.code, 1, r.out);
  assert.match(r.out, 'file cycle: model/a.ts <-> model/b.ts');
});

test('a file directly in src/ and a folder without a layer fail', () => {
  const r = check({ ...base, 'app.ts': 'export {};\n', 'extra/x.ts': 'export {};\n' });
  assert.is(r.code, 1, r.out);
  assert.match(r.out, 'files directly in src/ belong to no layer: app.ts');
  assert.match(r.out, 'folder src/extra/ has no place in LAYERS');
});

test.after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

test.run();
