/**
 * `BENCH_MODE=history npm run bench:fleet`: what the configuration history costs on the
 * commit path. The built bundle runs in its own process (API only, exporters placed nowhere),
 * once with the history on (CONFIG_HISTORY default 30d) and once with it off
 * (CONFIG_HISTORY=0), on a private redis-server and on the embedded store; this process PUTs
 * one webhook exporter (a new url each time, so every PUT commits) BENCH_PUTS times (default
 * 400, after 50 warm-up PUTs) one after another, and prints p50/p99 of the PUT round trip and
 * the server's CPU per PUT. Runs alternate (on, off, on, off) so load changes on a shared
 * machine hit both; the figure is each setting's median over its runs.
 */
import { cpus, loadavg } from 'node:os';
import { startRedis, type RedisServer } from '../test/helpers/redis.js';
import { cpuMicros, startProduct } from './product-proc.js';

const PUTS = Number(process.env.BENCH_PUTS ?? 400);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2);
const PASSWORD = 'bench-history-password';

const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))]!;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function run(env: Record<string, string>): Promise<{ p50: number; p99: number; cpuUs: number }> {
  const product = await startProduct({ ADMIN_PASSWORD: PASSWORD, ...env });
  try {
    const login = await fetch(`${product.url}/v1/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'admin', password: PASSWORD }),
    });
    const token = ((await login.json()) as { token: string }).token;
    const put = async (n: number) => {
      const res = await fetch(`${product.url}/v1/config/volga/webhooks/bench-history`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          name: 'bench-history',
          topics: ['t'],
          'site-placement': { sites: ['nowhere'] },
          url: `http://127.0.0.1:9/hook/${n}`,
          data: '${MSG}',
        }),
      });
      await res.arrayBuffer();
      if (res.status !== 201 && res.status !== 204) throw new Error(`PUT answered ${res.status}`);
    };
    for (let i = 0; i < 50; i++) await put(i);
    const times: number[] = [];
    const cpu0 = cpuMicros(product.pid);
    for (let i = 0; i < PUTS; i++) {
      const t0 = performance.now();
      await put(1000 + i);
      times.push(performance.now() - t0);
    }
    const cpuUs = (cpuMicros(product.pid) - cpu0) / PUTS;
    times.sort((a, b) => a - b);
    return { p50: pct(times, 50), p99: pct(times, 99), cpuUs };
  } finally {
    await product.stop();
  }
}

export async function historyBench(): Promise<void> {
  process.stdout.write(`bench:fleet history: ${PUTS} PUTs × ${ROUNDS} rounds per setting, ${cpus().length} CPUs\n`);
  process.stdout.write(
    `load average before: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}\n`,
  );
  let redis: RedisServer | undefined;
  try {
    redis = await startRedis();
    let db = 0;
    for (const backend of ['redis', 'embedded'] as const) {
      const results: Record<'on' | 'off', Array<{ p50: number; p99: number; cpuUs: number }>> = { on: [], off: [] };
      for (let r = 0; r < ROUNDS; r++)
        for (const mode of ['on', 'off'] as const) {
          const env: Record<string, string> = mode === 'off' ? { CONFIG_HISTORY: '0' } : {};
          if (backend === 'redis') env.REDIS_URL = `${redis.url}/${++db}`;
          results[mode].push(await run(env));
        }
      const line = (mode: 'on' | 'off') => {
        const rs = results[mode];
        return {
          p50: median(rs.map((x) => x.p50)),
          p99: median(rs.map((x) => x.p99)),
          cpu: median(rs.map((x) => x.cpuUs)),
        };
      };
      const on = line('on');
      const off = line('off');
      process.stdout.write(
        `  ${backend}: PUT p50 ${on.p50.toFixed(2)} ms with history, ${off.p50.toFixed(2)} ms without ` +
          `(× ${(on.p50 / off.p50).toFixed(2)}); p99 ${on.p99.toFixed(2)} / ${off.p99.toFixed(2)} ms; ` +
          `server CPU per PUT ${(on.cpu / 1000).toFixed(2)} / ${(off.cpu / 1000).toFixed(2)} ms\n`,
      );
    }
  } finally {
    await redis?.stop();
  }
  process.stdout.write(
    `load average after: ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}\n`,
  );
}
