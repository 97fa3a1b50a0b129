/**
 * Builds the status page's static files with esbuild: page/main.ts (and uPlot) as one
 * minified script, uPlot's and the page's CSS as one stylesheet, and page/index.html.
 * scripts/build.ts embeds the result in the bundle; without a bundle (tsx) assets.ts calls
 * this on the first request.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export type Asset = { type: string; body: string };

type Esbuild = {
  build(opts: Record<string, unknown>): Promise<{ outputFiles?: Array<{ text: string }> }>;
};

export async function buildPage(root?: string): Promise<Record<string, Asset>> {
  const here = root ? join(root, 'src', 'ui') : dirname(fileURLToPath(import.meta.url));
  const require = createRequire(join(here, 'build-page.ts'));
  const name = 'esbuild';
  const esbuild = (await import(name)) as Esbuild;
  const result = await esbuild.build({
    entryPoints: [join(here, 'page', 'main.ts')],
    bundle: true,
    format: 'iife',
    platform: 'browser',
    target: 'es2020',
    minify: true,
    write: false,
    legalComments: 'none',
    logLevel: 'silent',
  });
  const js = result.outputFiles?.[0]?.text ?? '';
  const css = [require.resolve('uplot/dist/uPlot.min.css'), join(here, 'page', 'style.css')]
    .map((f) => readFileSync(f, 'utf8'))
    .join('\n');
  return {
    'index.html': { type: 'text/html; charset=utf-8', body: readFileSync(join(here, 'page', 'index.html'), 'utf8') },
    'app.js': { type: 'text/javascript; charset=utf-8', body: js },
    'app.css': { type: 'text/css; charset=utf-8', body: css },
  };
}
