/**
 * Shared data and helpers of the http-query*.test.ts files: one small configuration written
 * through the real API (so both stores hold exactly what a user would have written), and
 * readers for the reply shapes. Not a test file itself (no `.test.ts`).
 */
import * as assert from 'uvu/assert';
import type { TestApi } from '../helpers/api.js';
import { firstProblem } from '../helpers/assert.js';

export type Info = { code?: string; parameter?: string; position?: number; path?: string; [k: string]: unknown };

export const sites = [
  {
    name: 'site-a',
    type: 'edge',
    description: 'first edge',
    labels: { env: 'prod', region: 'eu' },
    topology: { 'parent-site': 'tower' },
    hosts: [{ 'host-id': 'h1', labels: { gpu: 'yes' } }, { 'host-id': 'h2' }],
    'management-ipv4-access-list': ['10.0.0.0/8'],
  },
  { name: 'site-b', type: 'edge', labels: { env: 'dev', region: 'us' }, hosts: [{ 'host-id': 'h3' }] },
  { name: 'tower', type: 'control-tower', labels: { env: 'prod' } },
  { name: 'xeno', type: 'edge' },
] as const;

export const hooks = [
  {
    name: 'hook-a',
    topics: ['t1'],
    'site-placement': { 'all-sites': true },
    url: 'http://example.test/a',
    data: '${MSG}',
    'start-position': 'beginning',
    tries: 3,
  },
  {
    name: 'hook-b',
    topics: ['t2'],
    'site-placement': { 'match-site-labels': 'env = prod' },
    url: 'http://example.test/b',
    data: 'x',
  },
] as const;

/** Writes the fixture configuration through the API (one transaction, as a user would). */
export async function seed(api: TestApi): Promise<void> {
  const objects = [
    ...sites.map((s) => ({ 'x-path': `/v1/config/sites/${s.name}`, ...s })),
    ...hooks.map((h) => ({ 'x-path': `/v1/config/volga/webhooks/${h.name}`, ...h })),
    { 'x-path': '/v1/config/applications/app1', name: 'app1', version: '1.0' },
    {
      'x-path': '/v1/config/application-deployments/dep1',
      name: 'dep1',
      'application-name': 'app1',
      placement: { 'match-site-labels': 'env = prod' },
    },
    { 'x-path': '/v1/config/system/settings', 'default-domain': 'example.test' },
  ];
  const res = await api.json('PATCH', '/v1/config', { body: objects });
  assert.is(res.status, 204, `seed failed: ${JSON.stringify(res.body)}`);
}

/** GET expecting 200; returns the body. */
export async function ok(api: TestApi, path: string): Promise<unknown> {
  const res = await api.json('GET', path);
  assert.is(res.status, 200, `GET ${path}: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** GET expecting a list of objects; returns their `name`s in order. */
export async function names(api: TestApi, path: string): Promise<unknown[]> {
  const body = await ok(api, path);
  assert.ok(Array.isArray(body), `GET ${path}: not a list: ${JSON.stringify(body)}`);
  return body.map((o: { name?: unknown }) => o.name);
}

/** GET expecting a 400; returns the first error's code and details (after checking the body's shape). */
export async function bad(api: TestApi, path: string, status = 400): Promise<Info> {
  const res = await api.json('GET', path);
  assert.is(res.status, status, `GET ${path}: expected ${status}, got ${res.status} ${JSON.stringify(res.body)}`);
  return firstProblem(res.body) as Info;
}

/** Asserts a 400's error-info names `parameter` with `code` (and `position` when given). */
export async function rejected(
  api: TestApi,
  path: string,
  parameter: string,
  code: string,
  position?: number,
): Promise<void> {
  const info = await bad(api, path);
  const got = {
    parameter: info.parameter,
    code: info.code,
    ...(position !== undefined ? { position: info.position } : {}),
  };
  assert.equal(got, { parameter, code, ...(position !== undefined ? { position } : {}) }, `GET ${path}`);
}

/** Percent-encodes a query value (spaces, quotes, brackets, '=' and '&' inside expressions). */
export const q = (value: string): string => encodeURIComponent(value);

/** The objects of a multi-object read keyed by x-path. */
export function byPath(body: unknown): Map<string, Record<string, unknown>> {
  assert.ok(Array.isArray(body), `not a list: ${JSON.stringify(body)}`);
  return new Map(body.map((o: Record<string, unknown>) => [String(o['x-path']), o]));
}
