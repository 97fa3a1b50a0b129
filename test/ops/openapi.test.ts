/**
 * The OpenAPI 3.1 document at /v1/openapi.json and /v1/openapi.yaml (no token): valid for an
 * OpenAPI parser (@readme/openapi-parser), and the same routes as the server, both ways. The
 * server's routes come from the Hono app's route table, its wildcard routes expanded with the
 * resource table, and each path's methods from the server itself (OPTIONS → Allow, plus the
 * methods the route table names); each operation's query parameters are the ones the server
 * does not refuse as unknown.
 */
import { compileErrors, validate } from '@readme/openapi-parser';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parse as parseYaml } from 'yaml';
import { resources } from '../../src/model/resources.js';
import { queryParams } from '../../src/query/params.js';
import { openApiPath } from '../../src/ops/route-names.js';
import { resourceTemplates } from '../../src/api/route-table.js';
import { startApi } from '../helpers/api.js';

const api = await startApi('embedded');

type Doc = {
  openapi: string;
  paths: Record<string, Record<string, { parameters?: Array<{ name: string; in: string }>; security?: unknown[] }>>;
};

const doc = (await api.json('GET', '/v1/openapi.json', { headers: { authorization: '' } })).body as Doc;
const opMethods = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

test('served without a token as JSON and YAML, the same document', async () => {
  const json = await api.req('GET', '/v1/openapi.json', { headers: { authorization: '' } });
  assert.is(json.status, 200);
  assert.is(json.headers.get('content-type'), 'application/json');
  const yaml = await api.req('GET', '/v1/openapi.yaml', { headers: { authorization: '' } });
  assert.is(yaml.status, 200);
  assert.is(yaml.headers.get('content-type'), 'application/yaml');
  assert.equal(parseYaml(await yaml.text()), JSON.parse(await json.text()));
  assert.is(doc.openapi, '3.1.0');
});

test('valid OpenAPI 3.1 for @readme/openapi-parser', async () => {
  const result = await validate(structuredClone(doc) as never);
  assert.ok(result.valid, result.valid ? '' : compileErrors(result));
});

/** A concrete path for a template: each {param} filled with a plausible name. */
const concrete = (template: string) => template.replace(/\{[^}]+\}/g, 'probe-x');

/** The server's routes: path template → methods it answers (HEAD aside: it follows GET). */
async function serverRoutes(): Promise<Map<string, Set<string>>> {
  const out = new Map<string, Set<string>>();
  const add = (path: string, method: string) => {
    if (!out.has(path)) out.set(path, new Set());
    out.get(path)!.add(method);
  };
  for (const r of api.instance.app.routes) {
    const paths = r.path.endsWith('/*')
      ? resources.flatMap((def) => {
          const t = resourceTemplates(r.path.slice(0, -2), def);
          return t.item ? [t.base, t.item] : [t.base];
        })
      : [openApiPath(r.path)];
    for (const p of paths) {
      if (r.method !== 'ALL' && r.method !== 'HEAD') add(p, r.method);
      else if (!out.has(p)) out.set(p, new Set());
    }
  }
  // What each path answers, from the server itself.
  for (const [path, methods] of out) {
    const res = await api.req('OPTIONS', concrete(path));
    if (res.status === 204)
      for (const m of (res.headers.get('allow') ?? '').split(',').map((s) => s.trim()))
        if (m && m !== 'HEAD') methods.add(m);
  }
  return out;
}

test('every route the server answers is in the document, and nothing else', async () => {
  const server = await serverRoutes();
  const documented = new Map<string, Set<string>>();
  for (const [path, item] of Object.entries(doc.paths))
    documented.set(
      path,
      new Set(
        Object.keys(item)
          .filter((k) => opMethods.includes(k))
          .map((k) => k.toUpperCase()),
      ),
    );
  const fmt = (m: Map<string, Set<string>>) => [...m].map(([p, s]) => `${p} ${[...s].sort().join(',')}`).sort();
  assert.equal(fmt(documented), fmt(server));
  // Sanity: the expansion found the resources and the fixed routes.
  assert.ok(server.get('/v1/config/strongbox/vaults/{vault}/secrets/{name}')?.has('PUT'));
  assert.ok(server.get('/v1/state/volga/webhooks/{name}/restart')?.has('POST'));
  assert.ok(server.get('/readyz')?.has('GET'));
});

test("each operation's query parameters are exactly those the server accepts", async () => {
  let checked = 0;
  // Probes and metrics (outside /v1) take no parameter and ignore any: scrapers may add some.
  for (const [path, item] of Object.entries(doc.paths).filter(([p]) => p.startsWith('/v1/'))) {
    for (const [method, op] of Object.entries(item)) {
      if (!opMethods.includes(method) || method === 'options') continue;
      // The fleet's site routes take a site token, not a user's (test/fleet/sync.test.ts covers them).
      if ((op as { security?: Array<Record<string, unknown>> }).security?.some((s) => 'siteToken' in s)) continue;
      const listed = new Set((op.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name));
      const accepted = new Set<string>();
      for (const name of [...queryParams, 'no-such-parameter']) {
        // Only one parameter and no body: an accepted one can at most fail on the missing body.
        const res = await api.json(method.toUpperCase(), `${concrete(path)}?${name}=probe`);
        const code = (res.body as { errors?: Array<{ 'error-info'?: string }> })?.errors?.[0]?.['error-info'];
        const refused = res.status === 400 && (code === 'unknown-parameter' || code === 'no-dry-run');
        if (!refused) accepted.add(name);
        checked++;
      }
      assert.equal([...listed].sort(), [...accepted].sort(), `${method.toUpperCase()} ${path}`);
    }
  }
  assert.ok(checked > 100);
});

test('public routes need no token in the document either; the rest need the Bearer token', () => {
  // OPTIONS of a site's route answers before the site token is checked, as its 405 does.
  const publicOps = Object.entries(doc.paths).flatMap(([p, item]) =>
    Object.entries(item)
      .filter(([m, op]) => opMethods.includes(m) && Array.isArray(op.security) && op.security.length === 0)
      .map(([m]) => `${m} ${p}`),
  );
  assert.equal(publicOps.sort(), [
    'get /healthz',
    'get /metrics',
    'get /readyz',
    'get /ui',
    'get /ui/',
    'get /ui/{file}',
    'get /v1/openapi.json',
    'get /v1/openapi.yaml',
    'options /healthz',
    'options /metrics',
    'options /readyz',
    'options /ui',
    'options /ui/',
    'options /ui/{file}',
    'options /v1/fleet/sites/{name}/ack',
    'options /v1/fleet/sites/{name}/answer',
    'options /v1/fleet/sites/{name}/report',
    'options /v1/fleet/sites/{name}/sync',
    'options /v1/login',
    'options /v1/openapi.json',
    'options /v1/openapi.yaml',
    'post /v1/login',
  ]);
});

test.after(() => api.close());
test.run();
