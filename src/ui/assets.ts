/**
 * `/ui/`: the status page's static files. They are public (no token): the page holds no data;
 * it logs in and reads everything through the v1 API with the user's token, so what it shows
 * is what that user may read. The files are embedded in the bundle at build time
 * (scripts/build.ts defines __EDGEPLANE_UI__); run from source they are built once, on the
 * first request (build-page.ts, needs the esbuild dev dependency).
 */
import { createHash } from 'node:crypto';
import { Hono, type Context } from 'hono';
import { log } from '../lib/log.js';
import { ApiError } from '../lib/errors.js';
import type { Asset } from './build-page.js';
import { routes } from '../api/route-table.js';
import { allowRoutes, on } from '../api/routing.js';
import { errorText } from '../lib/error-text.js';

declare const __EDGEPLANE_UI__: Record<string, Asset> | undefined;

type Served = Asset & { etag: string };

let loading: Promise<Map<string, Served>> | undefined;

function load(): Promise<Map<string, Served>> {
  loading ??= (async () => {
    const assets: Record<string, Asset> =
      typeof __EDGEPLANE_UI__ !== 'undefined' ? __EDGEPLANE_UI__ : await (await import('./build-page.js')).buildPage();
    return new Map(
      Object.entries(assets).map(([k, a]) => [
        k,
        { ...a, etag: `"${createHash('sha256').update(a.body).digest('base64url').slice(0, 22)}"` },
      ]),
    );
  })();
  loading.catch(() => (loading = undefined));
  return loading;
}

const security = {
  'content-security-policy':
    "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-cache',
};

export function uiRoutes(): Hono {
  const app = new Hono();
  on(app, routes.ui, (c) => c.redirect('/ui/', 301));
  const file = async (c: Context) => {
    const file = c.req.path === '/ui/' ? 'index.html' : c.req.path.slice('/ui/'.length);
    let assets: Map<string, Served>;
    try {
      assets = await load();
    } catch (err) {
      log('error', 'status page: cannot build its files', { error: errorText(err) });
      return c.text('The status page is not built: run npm run build', 503);
    }
    const asset = assets.get(file);
    // In the error format of every other path (JSON: the path a client sent is never echoed as text).
    if (!asset)
      throw new ApiError('not-found', 'No such file of the status page (/ui/ serves index.html, app.js, app.css)', {
        code: 'missing',
        path: c.req.path,
      });
    if (c.req.header('if-none-match') === asset.etag)
      return new Response(null, { status: 304, headers: { etag: asset.etag, ...security } });
    return new Response(asset.body, { headers: { 'content-type': asset.type, etag: asset.etag, ...security } });
  };
  on(app, routes.uiIndex, file);
  on(app, routes.uiFile, file);
  // OPTIONS and 405 on the page's paths too (public, as the files are).
  allowRoutes(app);
  return app;
}
