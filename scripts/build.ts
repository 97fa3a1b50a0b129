/**
 * `npm run build`: one esbuild bundle (build/edgeplane.cjs, CommonJS because Node 20's
 * single-executable support runs a CommonJS main script) and a single executable
 * (build/edgeplane: a copy of this node binary with the bundle injected by postject).
 * `npm run build -- --bundle-only` skips the executable; `--out DIR` writes elsewhere.
 */
import { build } from 'esbuild';
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildPage } from '../src/ui/build-page.js';
import { errorText } from '../src/lib/error-text.js';

const outAt = process.argv.indexOf('--out');
const out = outAt > 0 && process.argv[outAt + 1] ? (process.argv[outAt + 1] as string) : 'build';
const bundle = join(out, 'edgeplane.cjs');

async function main(): Promise<void> {
  mkdirSync(out, { recursive: true });
  // The status page's files (src/ui/page, uPlot) go into the bundle as one constant.
  const ui = await buildPage(process.cwd());
  await build({
    entryPoints: ['worker.ts'],
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    outfile: bundle,
    minify: false,
    sourcemap: false,
    legalComments: 'none',
    logLevel: 'warning',
    // import.meta.url is only read when __filename is missing (ESM); give CJS a harmless value.
    define: { 'import.meta.url': '"file:///edgeplane.cjs"', __EDGEPLANE_UI__: JSON.stringify(ui) },
  });
  process.stdout.write(`bundle: ${bundle} (${(statSync(bundle).size / 1024).toFixed(0)} KiB)\n`);
  if (process.argv.includes('--bundle-only')) return;

  const blob = join(out, 'sea-prep.blob');
  const config = join(out, 'sea-config.json');
  writeFileSync(config, JSON.stringify({ main: bundle, output: blob, disableExperimentalSEAWarning: true }));
  execFileSync(process.execPath, ['--experimental-sea-config', config], { stdio: 'inherit' });
  const exe = join(out, 'edgeplane');
  rmSync(exe, { force: true });
  copyFileSync(process.execPath, exe);
  chmodSync(exe, 0o755);
  execFileSync(
    process.execPath,
    [
      join('node_modules', 'postject', 'dist', 'cli.js'),
      exe,
      'NODE_SEA_BLOB',
      blob,
      '--sentinel-fuse',
      'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2',
    ],
    { stdio: 'inherit' },
  );
  rmSync(blob, { force: true });
  process.stdout.write(`executable: ${exe} (${(statSync(exe).size / 1024 / 1024).toFixed(0)} MiB)\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`build failed: ${errorText(err)}\n`);
  process.exit(1);
});
