/**
 * `npm run bench:keyspace`: what the product costs a Redis whose keyspace is large (other
 * applications' keys beside ours), where every listing of keys (SCAN) reads the whole keyspace.
 * For our build and, with BENCH_BASELINE=<another build's edgeplane.cjs>, that one too, each on
 * a fresh redis-server filled with BENCH_KEYS (1,000,000) plain keys and in its own process (the
 * built bundle, API and exporter runtime, as `npm start` runs it): the Redis CPU and its time in
 * SCAN over BENCH_SECONDS (30) with no exporter, then the same with one exporter whose
 * `topic-patterns` match no topic yet, then how long a new matching stream waits for its
 * consumer group (the exporter found it). Prints the figures, and ours ÷ the baseline.
 * Every loop is bounded.
 */
import { createClient } from 'redis';
import { startRedis } from '../test/helpers/redis.js';
import { cpuMicros, login, serverPid, startProduct, type ProductProc } from './product-proc.js';

const keys = Number(process.env.BENCH_KEYS ?? 1_000_000);
const seconds = Number(process.env.BENCH_SECONDS ?? 30);
const password = 'bench-password-1';

type Figures = { idleCpuMs: number; idleScanMs: number; cpuMs: number; scanMs: number; foundMs: number };

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function fill(url: string): Promise<void> {
  const c = createClient({ url });
  await c.connect();
  for (let i = 0; i < keys; i += 1000) {
    const args = ['MSET'];
    for (let j = i; j < Math.min(keys, i + 1000); j++) args.push(`other-app:${j}`, 'x');
    await c.sendCommand(args);
  }
  await c.close();
}

/** Redis's CPU (ms) and its time in SCAN (ms) over `seconds`. */
async function measure(
  c: ReturnType<typeof createClient>,
  redisPid: number,
): Promise<{ cpuMs: number; scanMs: number }> {
  await c.sendCommand(['CONFIG', 'RESETSTAT']);
  const cpu0 = cpuMicros(redisPid);
  await sleep(seconds * 1000);
  const cpuMs = (cpuMicros(redisPid) - cpu0) / 1000;
  const stats = String(await c.sendCommand(['INFO', 'commandstats']));
  const scanUs = Number(/cmdstat_scan:calls=\d+,usec=(\d+)/.exec(stats)?.[1] ?? 0);
  return { cpuMs, scanMs: scanUs / 1000 };
}

async function run(bundle: string | undefined): Promise<Figures> {
  const redis = await startRedis();
  let product: ProductProc | undefined;
  const c = createClient({ url: redis.url });
  try {
    await fill(redis.url);
    await c.connect();
    const redisPid = await serverPid(redis.url);
    product = await startProduct({ REDIS_URL: redis.url, ADMIN_PASSWORD: password }, bundle);
    const token = await login(product.url, password);
    await sleep(3000);
    const idle = await measure(c, redisPid);
    const r = await fetch(`${product.url}/v1/config/volga/webhooks/patterns`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'patterns',
        'topic-patterns': ['^kspace-'],
        'site-placement': { 'all-sites': true },
        url: 'http://127.0.0.1:9/x',
        data: '${MSG}',
      }),
    });
    if (r.status !== 201) throw new Error(`exporter: ${r.status} ${await r.text()}`);
    await sleep(3000);
    const busy = await measure(c, redisPid);
    const t0 = performance.now();
    await c.sendCommand(['XADD', 'volga:kspace-new', '*', 'a', '1']);
    let foundMs = NaN;
    for (let i = 0; i < 2400; i++) {
      const groups = (await c.sendCommand(['XINFO', 'GROUPS', 'volga:kspace-new'])) as unknown[];
      if (groups.length > 0) {
        foundMs = performance.now() - t0;
        break;
      }
      await sleep(50);
    }
    return { idleCpuMs: idle.cpuMs, idleScanMs: idle.scanMs, cpuMs: busy.cpuMs, scanMs: busy.scanMs, foundMs };
  } finally {
    await product?.stop();
    await c.close().catch(() => undefined);
    await redis.stop();
  }
}

function line(name: string, f: Figures): string {
  const pct = (ms: number) => `${((100 * ms) / (seconds * 1000)).toFixed(1)} %`;
  return (
    `  ${name.padEnd(9)} no exporter: Redis CPU ${f.idleCpuMs.toFixed(0)} ms (${pct(f.idleCpuMs)}), SCAN ${f.idleScanMs.toFixed(0)} ms; ` +
    `one topic-patterns exporter: Redis CPU ${f.cpuMs.toFixed(0)} ms (${pct(f.cpuMs)}), SCAN ${f.scanMs.toFixed(0)} ms; ` +
    `a new topic found after ${f.foundMs.toFixed(0)} ms`
  );
}

async function main(): Promise<void> {
  process.stdout.write(`${keys} other keys in Redis; Redis CPU over ${seconds} s\n`);
  const ours = await run(undefined);
  process.stdout.write(line('ours', ours) + '\n');
  const other = process.env.BENCH_BASELINE;
  if (!other) return;
  const base = await run(other);
  process.stdout.write(line('baseline', base) + '\n');
  process.stdout.write(
    `ours ÷ baseline: Redis CPU with no exporter ${(ours.idleCpuMs / base.idleCpuMs).toFixed(3)}, ` +
      `with the topic-patterns exporter ${(ours.cpuMs / base.cpuMs).toFixed(3)}; ` +
      `time to find a new topic ${(ours.foundMs / base.foundMs).toFixed(2)}\n`,
  );
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
