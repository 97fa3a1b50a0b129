/**
 * Issue 3, item 3: 50 concurrent transactions from several clients, through two API server
 * processes sharing one Redis (DB 14), over real HTTP. Three sites carry a counter label `n`
 * and a stamp label `gen`; every transaction sets all three to n+1 and its own stamp.
 * Half the clients read with send-etag and send x-etag preconditions (retry on 412); the
 * other half send x-json-patch `test` (n is still what they read) + `replace` (retry on the
 * failed test). Shown:
 * - no lost update: the final n equals the number of successful transactions, and the values
 *   of n written by successful transactions are exactly 1..N, each once;
 * - every x-etag precondition honoured (a stale x-etag never commits: that is what keeps the
 *   values 1..N unique);
 * - no partial commit: a watcher polling GET /v1/config never sees the three objects with
 *   different stamps or counters.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnApiProc, type ApiProc } from '../helpers/api-proc.js';
import { freshRedisDb } from '../helpers/redis.js';

const SITES = ['s1', 's2', 's3'];
const CLIENTS = 50;
const ROUNDS = 2;
const MAX_ATTEMPTS = 400;

type Server = { proc: ApiProc; token: string };
type SiteDoc = { 'x-path': string; 'x-etag'?: string; labels?: Record<string, string> };

async function call(
  s: Server,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: unknown }> {
  const res = await fetch(s.proc.url + path, {
    method,
    headers: {
      authorization: `Bearer ${s.token}`,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as unknown) : undefined };
}

async function readSites(s: Server): Promise<SiteDoc[]> {
  const r = await call(s, 'GET', '/v1/config?send-etag=true&match-path=/v1/config/sites/*');
  assert.is(r.status, 200, JSON.stringify(r.body));
  return r.body as SiteDoc[];
}

const counterOf = (d: SiteDoc): number => Number(d.labels?.n);
const errorCode = (body: unknown): string | undefined =>
  (body as { errors?: Array<{ 'error-info'?: string }> } | undefined)?.errors?.[0]?.['error-info'];
const refused = { 'x-etag': 0, 'json-patch': 0, contention: 0 };
const pause = () => new Promise((r) => setTimeout(r, Math.random() * 5));

/** One client transaction, retried until it commits; returns the n it wrote. */
async function transact(s: Server, stamp: string, style: 'x-etag' | 'json-patch'): Promise<number> {
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const docs = await readSites(s);
    const n = counterOf(docs[0] as SiteDoc);
    const next = String(n + 1);
    const body = docs.map((d) =>
      style === 'x-etag'
        ? { 'x-path': d['x-path'], 'x-operation': 'update', 'x-etag': d['x-etag'], labels: { n: next, gen: stamp } }
        : {
            'x-path': d['x-path'],
            'x-operation': 'update',
            'x-json-patch': [
              { op: 'test', path: '/labels/n', value: String(counterOf(d)) },
              { op: 'replace', path: '/labels/n', value: next },
              { op: 'replace', path: '/labels/gen', value: stamp },
            ],
          },
    );
    const r = await call(s, 'PATCH', '/v1/config', body);
    if (r.status === 204) return n + 1;
    const code = errorCode(r.body);
    const expected =
      style === 'x-etag' ? r.status === 412 && code === 'etag-mismatch' : r.status === 400 && code === 'test-failed';
    // 409 contention: the server gave up re-running under heavy load; the client retries too.
    if (!expected && !(r.status === 409 && code === 'contention'))
      throw new Error(`unexpected ${r.status}: ${JSON.stringify(r.body)}`);
    refused[expected ? style : 'contention']++;
    await pause();
  }
  throw new Error(`client ${stamp} did not commit within ${MAX_ATTEMPTS} attempts`);
}

test('two processes, 50 clients: no lost update, no partial commit, x-etag honoured', async () => {
  const redisUrl = await freshRedisDb(14);
  const env = {
    REDIS_URL: redisUrl,
    ADMIN_PASSWORD: 'admin-password-1',
    STRONGBOX_KEY: randomBytes(32).toString('base64'),
  };
  const procs = await Promise.all(
    [0, 1].map((i) =>
      spawnApiProc({ ...env, DATA_DIR: mkdtempSync(join(tmpdir(), `edgeplane-tx-${i}-`)), SITE: `site${i}` }),
    ),
  );
  try {
    const servers: Server[] = [];
    for (const proc of procs) {
      const login = await fetch(`${proc.url}/v1/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username: 'admin', password: 'admin-password-1' }),
      });
      assert.is(login.status, 200);
      servers.push({ proc, token: ((await login.json()) as { token: string }).token });
    }
    const [a, b] = servers as [Server, Server];
    const init = await call(
      a,
      'PATCH',
      '/v1/config',
      SITES.map((s) => ({
        'x-path': `/v1/config/sites/${s}`,
        'x-operation': 'create',
        labels: { n: '0', gen: 'init' },
      })),
    );
    assert.is(init.status, 204, JSON.stringify(init.body));

    let watching = true;
    const partial: string[] = [];
    let snapshots = 0;
    const watcher = (async () => {
      while (watching) {
        const docs = await readSites(b);
        snapshots++;
        const stamps = new Set(docs.map((d) => `${d.labels?.gen}@${d.labels?.n}`));
        if (docs.length !== SITES.length || stamps.size !== 1) partial.push(JSON.stringify(docs.map((d) => d.labels)));
      }
    })();

    const written: number[] = [];
    await Promise.all(
      Array.from({ length: CLIENTS }, async (_, c) => {
        const server = servers[c % 2] as Server;
        for (let round = 0; round < ROUNDS; round++) {
          written.push(await transact(server, `c${c}r${round}`, c % 4 < 2 ? 'x-etag' : 'json-patch'));
        }
      }),
    );
    watching = false;
    await watcher;

    const total = CLIENTS * ROUNDS;
    const final = await readSites(a);
    assert.equal(
      final.map(counterOf),
      SITES.map(() => total),
      'every site counts every transaction',
    );
    assert.equal(
      [...written].sort((x, y) => x - y),
      Array.from({ length: total }, (_, i) => i + 1),
      'each successful transaction wrote a distinct n',
    );
    assert.equal(partial, [], 'no snapshot showed a transaction half applied');
    assert.ok(snapshots > 0);
    process.stdout.write(
      `  ${total} transactions committed; refused and retried: ${JSON.stringify(refused)}; ${snapshots} snapshots watched\n`,
    );
    // Both processes see the same final state.
    assert.equal(
      (await readSites(b)).map((d) => d['x-etag']),
      final.map((d) => d['x-etag']),
    );
  } finally {
    await Promise.all(procs.map((p) => p.stop()));
  }
});

test.run();
