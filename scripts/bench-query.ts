/**
 * `npm run bench:query`: what `where` and `fields` cost on a list of 10,000 sites.
 * The sites are committed straight into an embedded store (batches of 500: seconds, not
 * minutes through HTTP); the requests then go through the real app in-process (app.fetch, the
 * handler the server runs, without socket noise). For each of a plain GET, a GET with a
 * three-predicate `where` plus `re-match`, and a GET with `fields`: warm-up, then RUNS timed
 * runs, median and p90, and the ratio to the plain GET of the same run. Then the `where`
 * evaluation alone (compile + test over the 10,000 values) to show where the time goes.
 * Bounded: a fixed number of runs, stops by itself (well under a minute).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { JsonObject } from '../src/lib/json.js';
import { configKey } from '../src/store/keys.js';
import { compileWhere } from '../src/query/where.js';
import { compileFields } from '../src/query/fields.js';
import { createInstance } from '../src/main/server.js';
import { loadSettings } from '../src/lib/settings.js';
import type { WriteOp } from '../src/store/store.js';

const SITES = 10_000;
const BATCH = 500;
const WARMUP = 5;
const RUNS = 25;
const TENANT = 'default';
const WHERE = "type = 'edge' and labels/env = 'prod' and hosts/host-id != '' and re-match(name, '^site-[0-9]*7$')";
const FIELDS = 'name,labels/env';

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
  const settings = loadSettings({
    DATA_DIR: dataDir,
    ADMIN_PASSWORD: 'bench-password-1',
    LOG_LEVEL: 'error',
    SITE: 'local',
  });
  const instance = await createInstance(settings, { runtime: false, announce: () => {} });
  try {
    const store = instance.deps.store;
    const t0 = performance.now();
    for (let start = 0; start < SITES; start += BATCH) {
      const ops: WriteOp[] = [];
      for (let i = start; i < Math.min(SITES, start + BATCH); i++)
        ops.push({ op: 'put', key: configKey(TENANT, `sites/site-${i}`), value: site(i) });
      const r = await store.commit(ops);
      if (!r.ok) throw new Error(`commit failed: ${r.reason} at ${r.key}`);
    }
    console.log(
      `wrote ${SITES} sites in ${(performance.now() - t0).toFixed(0)} ms (embedded store, batches of ${BATCH})`,
    );

    const login = await instance.app.fetch(
      new Request('http://bench.test/v1/login', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username: 'admin', password: 'bench-password-1' }),
      }),
    );
    const { token } = (await login.json()) as { token: string };
    const get = async (query: string): Promise<{ ms: number; items: number }> => {
      const started = performance.now();
      const res = await instance.app.fetch(
        new Request(`http://bench.test/v1/config/sites${query}`, { headers: { authorization: `Bearer ${token}` } }),
      );
      const body = await res.text();
      const ms = performance.now() - started;
      if (res.status !== 200) throw new Error(`GET ${query}: ${res.status} ${body.slice(0, 200)}`);
      return { ms, items: (JSON.parse(body) as unknown[]).length };
    };

    const cases = [
      ['plain GET', ''],
      ['where (3 predicates + re-match)', `?where=${encodeURIComponent(WHERE)}`],
      [`fields=${FIELDS}`, `?fields=${encodeURIComponent(FIELDS)}`],
    ] as const;
    const times = new Map<string, number[]>(cases.map(([name]) => [name, []]));
    const items = new Map<string, number>();
    for (let i = 0; i < WARMUP; i++) for (const [, query] of cases) await get(query);
    // Interleaved, so a slow phase of the machine weighs on every case alike.
    for (let i = 0; i < RUNS; i++) {
      for (const [name, query] of cases) {
        const r = await get(query);
        times.get(name)?.push(r.ms);
        items.set(name, r.items);
      }
    }
    const plain = stats(times.get('plain GET') ?? []).median;
    console.log(`\nGET /v1/config/sites, ${SITES} sites, ${WARMUP} warm-up + ${RUNS} runs each (in-process app.fetch)`);
    for (const [name] of cases) {
      const s = stats(times.get(name) ?? []);
      console.log(
        `  ${name.padEnd(34)} median ${s.median.toFixed(1).padStart(6)} ms  p90 ${s.p90.toFixed(1).padStart(6)} ms  ×${(s.median / plain).toFixed(2)} of plain  (${items.get(name)} items)`,
      );
    }

    // The evaluation alone: what the where adds on top of reading and encoding the list.
    const values = (await store.list(configKey(TENANT, 'sites'))).map((e) => e.value);
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
    await instance.close(1000);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.stack : String(err));
  process.exit(1);
});
