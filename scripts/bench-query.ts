/**
 * `npm run bench:query`: what list reads cost on a list of 10,000 sites, on each store
 * (`BENCH_STORES`, default `embedded,redis`), measured on the product as users run it: the
 * built bundle (`node build/edgeplane.cjs`, scripts/product-proc.ts) in its own process, asked
 * over HTTP by this process. The sites are committed first straight into the store (batches of
 * 500: seconds, not minutes through HTTP): an embedded store in a fresh DATA_DIR, or a private
 * redis-server, which the product then opens. For each of a plain GET (the baseline), `count`,
 * a GET with a three-predicate `where` plus `re-match`, and a GET with `fields`: warm-up, then
 * RUNS timed runs interleaved, median and p90, and the ratio to the plain GET of the same run;
 * the product's CPU time per request of each case (mean over the runs: /proc counts 10 ms
 * ticks). Then the `where` evaluation alone (compile + test over the 10,000 values, in this
 * process) to show where the time goes. Goals (issue #22): `count` ≤ 5 ms and `where` ≤ 25 ms
 * median on both stores. Bounded: a fixed number of runs, stops by itself (about a minute).
 * BENCH_BUILD=0 reuses build/.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { JsonObject } from '../src/lib/json.js';
import { configKey } from '../src/store/keys.js';
import { compileWhere } from '../src/query/where.js';
import { compileFields } from '../src/query/fields.js';
import { openEmbeddedStore } from '../src/store/embedded.js';
import { openRedisStore } from '../src/store/redis.js';
import { startRedis } from '../test/helpers/redis.js';
import type { WriteOp } from '../src/store/store.js';
import { cpuMicros, startProduct, type ProductProc } from './product-proc.js';

const SITES = 10_000;
const BATCH = 500;
const WARMUP = 5;
const RUNS = 25;
const TENANT = 'default';
const WHERE = "type = 'edge' and labels/env = 'prod' and hosts/host-id != '' and re-match(name, '^site-[0-9]*7$')";
const FIELDS = 'name,labels/env';
const PASSWORD = 'bench-password-1';

function site(i: number): JsonObject {
  return {
    name: `site-${i}`,
    type: i % 10 === 0 ? 'control-tower' : 'edge',
    labels: { env: i % 3 === 0 ? 'dev' : 'prod', region: `r${i % 7}` },
    topology: { 'parent-site': 'site-0' },
    hosts: [{ 'host-id': `h-${i}`, labels: { gpu: i % 2 === 0 ? 'yes' : 'no' } }],
    'management-ipv4-access-list': ['10.0.0.0/8'],
  };
}

function stats(ms: number[]): { median: number; p90: number } {
  const s = [...ms].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? NaN;
  return { median: at(0.5), p90: at(0.9) };
}

type Store = 'embedded' | 'redis';

/** Writes the sites into a store of the kind asked; the product's environment to open it. */
async function prepare(kind: Store): Promise<{ env: Record<string, string>; cleanup(): Promise<void> }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'edgeplane-bench-query-'));
  const redis = kind === 'redis' ? await startRedis() : undefined;
  const store = redis ? await openRedisStore(redis.url) : await openEmbeddedStore(dataDir);
  const t0 = performance.now();
  for (let start = 0; start < SITES; start += BATCH) {
    const ops: WriteOp[] = [];
    for (let i = start; i < Math.min(SITES, start + BATCH); i++)
      ops.push({ op: 'put', key: configKey(TENANT, `sites/site-${i}`), value: site(i) });
    const r = await store.commit(ops);
    if (!r.ok) throw new Error(`commit failed: ${r.reason} at ${r.key}`);
  }
  await store.close();
  console.log(`\n${kind}: wrote ${SITES} sites in ${(performance.now() - t0).toFixed(0)} ms (batches of ${BATCH})`);
  return {
    env: { DATA_DIR: dataDir, ADMIN_PASSWORD: PASSWORD, ...(redis ? { REDIS_URL: redis.url } : {}) },
    async cleanup() {
      await redis?.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

const CASES = [
  ['plain GET', ''],
  ['count', '?count'],
  ['where (3 predicates + re-match)', `?where=${encodeURIComponent(WHERE)}`],
  [`fields=${FIELDS}`, `?fields=${encodeURIComponent(FIELDS)}`],
] as const;

type Measured = Map<string, { ms: number[]; cpuMs: number[]; items: number }>;

/** Every case over HTTP against the product: warm-up, then RUNS interleaved runs. */
async function measureHttp(product: ProductProc): Promise<Measured> {
  const login = await fetch(`${product.url}/v1/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'admin', password: PASSWORD }),
  });
  const { token } = (await login.json()) as { token: string };
  const get = async (query: string): Promise<{ ms: number; cpuUs: number; items: number }> => {
    const cpu0 = cpuMicros(product.pid);
    const started = performance.now();
    const res = await fetch(`${product.url}/v1/config/sites${query}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const body = await res.text();
    const ms = performance.now() - started;
    const cpuUs = cpuMicros(product.pid) - cpu0;
    if (res.status !== 200) throw new Error(`GET ${query}: ${res.status} ${body.slice(0, 200)}`);
    const parsed = JSON.parse(body) as unknown[] | { count: number };
    return { ms, cpuUs, items: Array.isArray(parsed) ? parsed.length : parsed.count };
  };
  const out: Measured = new Map(CASES.map(([name]) => [name, { ms: [], cpuMs: [], items: 0 }]));
  for (let i = 0; i < WARMUP; i++) for (const [, query] of CASES) await get(query);
  // Interleaved, so a slow phase of the machine weighs on every case alike.
  for (let i = 0; i < RUNS; i++)
    for (const [name, query] of CASES) {
      const r = await get(query);
      const m = out.get(name)!;
      m.ms.push(r.ms);
      m.cpuMs.push(r.cpuUs / 1000);
      m.items = r.items;
    }
  return out;
}

function printHttp(kind: Store, measured: Measured): void {
  const plain = stats(measured.get('plain GET')?.ms ?? []).median;
  console.log(
    `GET /v1/config/sites on ${kind}, ${SITES} sites, ${WARMUP} warm-up + ${RUNS} runs each (the bundle in its own process, over HTTP)`,
  );
  for (const [name, m] of measured) {
    const s = stats(m.ms);
    // /proc counts CPU in 10 ms ticks: the mean over the runs, not a per-request median.
    const cpuMean = m.cpuMs.reduce((x, y) => x + y, 0) / Math.max(1, m.cpuMs.length);
    console.log(
      `  ${name.padEnd(34)} median ${s.median.toFixed(1).padStart(6)} ms  p90 ${s.p90.toFixed(1).padStart(6)} ms  ×${(s.median / plain).toFixed(2)} of plain  server CPU mean ${cpuMean.toFixed(1)} ms  (${m.items} items)`,
    );
  }
}

/** The evaluation alone: what `where` and `fields` add on top of reading and encoding the list. */
function measureInMemory(values: JsonObject[]): void {
  const alone: number[] = [];
  const project: number[] = [];
  let matched = 0;
  for (let i = 0; i < WARMUP + RUNS; i++) {
    const a = performance.now();
    const w = compileWhere(WHERE);
    matched = 0;
    for (const v of values) if (w.test(v)) matched++;
    const b = performance.now();
    const f = compileFields(FIELDS);
    for (const v of values) f.apply(v);
    const c = performance.now();
    if (i >= WARMUP) {
      alone.push(b - a);
      project.push(c - b);
    }
  }
  const w = stats(alone);
  const f = stats(project);
  console.log(`\nin memory, over the ${values.length} values:`);
  console.log(
    `  compileWhere + test                median ${w.median.toFixed(1).padStart(6)} ms  p90 ${w.p90.toFixed(1).padStart(6)} ms  (${matched} match)`,
  );
  console.log(
    `  compileFields + apply              median ${f.median.toFixed(1).padStart(6)} ms  p90 ${f.p90.toFixed(1).padStart(6)} ms`,
  );
}

async function main(): Promise<void> {
  const kinds = (process.env.BENCH_STORES ?? 'embedded,redis').split(',').map((k) => k.trim()) as Store[];
  const goals: string[] = [];
  for (const kind of kinds) {
    if (kind !== 'embedded' && kind !== 'redis') throw new Error(`BENCH_STORES: unknown store ${String(kind)}`);
    const prepared = await prepare(kind);
    try {
      const product = await startProduct(prepared.env);
      try {
        const measured = await measureHttp(product);
        printHttp(kind, measured);
        const count = stats(measured.get('count')?.ms ?? []).median;
        const where = stats(measured.get(CASES[2][0])?.ms ?? []).median;
        goals.push(
          `${kind}: count ≤ 5 ms → ${count <= 5 ? 'met' : 'NOT met'} (${count.toFixed(1)} ms); where ≤ 25 ms → ${where <= 25 ? 'met' : 'NOT met'} (${where.toFixed(1)} ms)`,
        );
      } finally {
        await product.stop();
      }
    } finally {
      await prepared.cleanup();
    }
  }
  measureInMemory(Array.from({ length: SITES }, (_, i) => site(i)));
  console.log(
    `\ngoals (median):\n  ${goals.join('\n  ')}\n(load average ${readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')})`,
  );
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.stack : String(err));
  process.exit(1);
});
