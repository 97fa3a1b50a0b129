/**
 * Running the exporter runtime for tests, against real Redis:
 * - `openEnv(url)`: store + bus + helpers to write webhook/site objects, produce and poll
 *   state, in this process (one Redis database per test file keeps files apart).
 * - `spawnExporterProc(url, site)`: the runtime in a child process started with
 *   `node --import tsx` (this file run directly), for kill -9 tests.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { openRedisBus } from '../../src/bus/redis-bus.js';
import type { Bus, ProduceInput } from '../../src/bus/bus.js';
import {
  startRuntime,
  type Clock,
  type Runtime,
  type RuntimeOptions,
  type SecretReader,
} from '../../src/exporter/runtime.js';
import type { JsonObject } from '../../src/lib/json.js';
import { configKey } from '../../src/store/keys.js';
import { openRedisStore } from '../../src/store/redis.js';
import { eventually } from './wait.js';
import type { Store } from '../../src/store/store.js';

export type Env = {
  url: string;
  store: Store;
  bus: Bus;
  tenant: string;
  put(path: string, value: JsonObject): Promise<void>;
  del(path: string): Promise<void>;
  webhook(cfg: JsonObject): Promise<void>;
  produce(topic: string, payload: string, extra?: Omit<ProduceInput, 'payload'>): Promise<string>;
  start(opts?: Partial<RuntimeOptions> & { site?: string }): Promise<Runtime>;
  /**
   * A webhook exporter on a fresh topic (names from `uniq`) posting the payload to
   * `${sinkUrl}/<name>`, `cfg` on top; waits until `rt` consumes its topic unless `wait` is false.
   */
  exporter(rt: Runtime, sinkUrl: string, cfg?: JsonObject, wait?: boolean): Promise<{ topic: string; name: string }>;
  /** Polls the runtime's state of an exporter until `cond` holds. */
  state(rt: Runtime, name: string, cond: (s: JsonObject) => boolean, what?: string): Promise<JsonObject>;
  close(): Promise<void>;
};

let seq = 0;
/** A name no other call of this process gets: the prefix and a counter. */
export const uniq = (prefix: string): string => `${prefix}${++seq}`;

export async function openEnv(url: string, tenant = 'default'): Promise<Env> {
  const store = await openRedisStore(url);
  const bus = await openRedisBus(url);
  const runtimes: Runtime[] = [];
  const commit = async (ops: Parameters<Store['commit']>[0]) => {
    const r = await store.commit(ops);
    if (!r.ok) throw new Error(`commit failed: ${r.reason} ${r.key}`);
  };
  const env: Env = {
    url,
    store,
    bus,
    tenant,
    put: (path, value) => commit([{ op: 'put', key: configKey(tenant, path), value }]),
    del: (path) => commit([{ op: 'delete', key: configKey(tenant, path) }]),
    webhook: (cfg) => commit([{ op: 'put', key: configKey(tenant, `volga/webhooks/${String(cfg.name)}`), value: cfg }]),
    produce: (topic, payload, extra) => bus.produce(topic, { payload, ...extra }),
    async start(opts = {}) {
      const rt = await startRuntime({
        settings: { site: opts.site ?? 'local', globalDomain: 'edge.example' },
        store,
        bus,
        attemptTimeoutMs: 1000,
        pollMs: 1000,
        ...opts,
      });
      runtimes.push(rt);
      return rt;
    },
    async exporter(rt, sinkUrl, cfg = {}, wait = true) {
      const topic = uniq('topic-');
      const name = uniq('hook-');
      await env.webhook({
        name,
        topics: [topic],
        'site-placement': { 'all-sites': true },
        url: `${sinkUrl}/${name}`,
        data: '${MSG_PAYLOAD}',
        ...cfg,
      });
      if (wait)
        await env.state(
          rt,
          name,
          (st) => st.status === 'ready' && (st['consumed-topics'] as string[]).length > 0,
          `${name} ready`,
        );
      return { topic, name };
    },
    state: (rt, name, cond, what) =>
      eventually(
        () => {
          const s = rt.exporterState(tenant, name);
          return s && cond(s) ? s : undefined;
        },
        what ?? `state of ${name}`,
      ),
    async close() {
      for (const rt of runtimes) await rt.stop(1000);
      await bus.close();
      await store.close();
    },
  };
  return env;
}

/** A clock whose sleeps return at once and are recorded (retry tests never wait). */
export function fakeClock(): Clock & { sleeps: number[] } {
  const sleeps: number[] = [];
  return {
    sleeps,
    now: () => Date.now(),
    sleep: (ms) => {
      sleeps.push(ms);
      return new Promise((r) => setImmediate(r));
    },
  };
}

export function staticSecrets(
  data: Record<string, Record<string, string>>,
  isSealed: () => boolean = () => false,
): SecretReader {
  return {
    sealed: isSealed,
    async read(tenant, vault, secret) {
      const d = data[`${tenant}/${vault}/${secret}`];
      if (!d) throw new Error(`secret ${secret} not found`);
      return d;
    },
  };
}

export type ExporterProc = { child: ChildProcess; kill9(): Promise<void>; stop(): Promise<void> };

/** The runtime in a child process; resolves once it reports that it started. */
export async function spawnExporterProc(url: string, site: string): Promise<ExporterProc> {
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), url, site], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('EXPORTER-PROC-READY')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`exporter process exited early (${code})`)));
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    child,
    async kill9() {
      child.kill('SIGKILL');
      await exited;
    },
    async stop() {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

async function childMain(url: string, site: string): Promise<void> {
  const store = await openRedisStore(url);
  const bus = await openRedisBus(url);
  const rt = await startRuntime({
    settings: { site, globalDomain: 'edge.example' },
    store,
    bus,
    attemptTimeoutMs: 2000,
    pollMs: 1000,
  });
  process.stdout.write('EXPORTER-PROC-READY\n');
  process.once('SIGTERM', () => {
    void rt
      .stop(2000)
      .then(() => Promise.all([bus.close(), store.close()]))
      .then(() => process.exit(0));
  });
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const [url, site] = process.argv.slice(2);
  childMain(url ?? '', site ?? 'local').catch((err: unknown) => {
    process.stderr.write(String(err) + '\n');
    process.exit(1);
  });
}
