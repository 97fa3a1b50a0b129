/**
 * `npm run bench:query`: what `where` and `fields` cost on a list of 10,000 sites, measured on
 * the product as users run it: the built bundle (`node build/edgeplane.cjs`, scripts/
 * product-proc.ts) in its own process, asked over HTTP by this process. The sites are committed
 * first straight into an embedded store in a fresh DATA_DIR (batches of 500: seconds, not
 * minutes through HTTP), which the product then opens. For each of a plain GET (the baseline),
 * a GET with a three-predicate `where` plus `re-match`, and a GET with `fields`: warm-up, then
 * RUNS timed runs interleaved, median and p90, and the ratio to the plain GET of the same run;
 * the product's CPU time per request of each case (mean over the runs: /proc counts 10 ms ticks). Then the `where` evaluation alone (compile +
 * test over the 10,000 values, in this process) to show where the time goes. Bounded: a fixed
 * number of runs, stops by itself (well under a minute). BENCH_BUILD=0 reuses build/.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { JsonObject } from '../src/lib/json.js';
import { configKey } from '../src/store/keys.js';
import { compileWhere } from '../src/query/where.js';
import { compileFields } from '../src/query/fields.js';
import { openEmbeddedStore } from '../src/store/embedded.js';
import type { WriteOp } from '../src/store/store.js';
import { cpuMicros, startProduct } from './product-proc.js';

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

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'edgeplane-bench-query-'));
  const store = await openEmbeddedStore(dataDir);
  const t0 = performance.now();
  for (let start = 0; start < SITES; start += BATCH) {
    const ops: WriteOp[] = [];
    for (let i = start; i < Math.min(SITES, start + BATCH); i++)
      ops.push({ op: 'put', key: configKey(TENANT, `sites/site-${i}`), value: site(i) });
    const r = await store.commit(ops);
    if (!r.ok) throw new Error(`commit failed: ${r.reason} at ${r.key}`);
  }
  const values = (await store.list(configKey(TENANT, 'sites'))).map((e) => e.value);
  await store.close();
  console.log(
    `wrote ${SITES} sites in ${(performance.now() - t0).toFixed(0)} ms (embedded store, batches of ${BATCH})`,
  );

  const product = await startProduct({ DATA_DIR: dataDir, ADMIN_PASSWORD: PASSWORD });
  try {
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
      return { ms, cpuUs, items: (JSON.parse(body) as unknown[]).length };
    };

    const cases = [
      ['plain GET', ''],
      ['where (3 predicates + re-match)', `?where=${encodeURIComponent(WHERE)}`],
      [`fields=${FIELDS}`, `?fields=${encodeURIComponent(FIELDS)}`],
    ] as const;
    const times = new Map<string, number[]>(cases.map(([name]) => [name, []]));
    const cpu = new Map<string, number[]>(cases.map(([name]) => [name, []]));
    const items = new Map<string, number>();
    for (let i = 0; i < WARMUP; i++) for (const [, query] of cases) await get(query);
    // Interleaved, so a slow phase of the machine weighs on every case alike.
    for (let i = 0; i < RUNS; i++) {
      for (const [name, query] of cases) {
        const r = await get(query);
        times.get(name)?.push(r.ms);
        cpu.get(name)?.push(r.cpuUs / 1000);
        items.set(name, r.items);
      }
    }
    const plain = stats(times.get('plain GET') ?? []).median;
    console.log(
      `\nGET /v1/config/sites, ${SITES} sites, ${WARMUP} warm-up + ${RUNS} runs each (the bundle in its own process, over HTTP)`,
    );
    for (const [name] of cases) {
      const s = stats(times.get(name) ?? []);
      // /proc counts CPU in 10 ms ticks: the mean over the runs, not a per-request median.
      const c = cpu.get(name) ?? [];
      const cpuMean = c.reduce((x, y) => x + y, 0) / Math.max(1, c.length);
      console.log(
        `  ${name.padEnd(34)} median ${s.median.toFixed(1).padStart(6)} ms  p90 ${s.p90.toFixed(1).padStart(6)} ms  ×${(s.median / plain).toFixed(2)} of plain  server CPU mean ${cpuMean.toFixed(1)} ms  (${items.get(name)} items)`,
      );
    }

    // The evaluation alone: what the where adds on top of reading and encoding the list.
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
    const whereMedian = stats(times.get(cases[1][0]) ?? []).median;
    console.log(
      `\ngoal: where under 50 ms median → ${whereMedian < 50 ? 'met' : 'NOT met'} (${whereMedian.toFixed(1)} ms)`,
    );
  } finally {
    await product.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.stack : String(err));
  process.exit(1);
});
