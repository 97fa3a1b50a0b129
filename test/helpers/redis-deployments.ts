/**
 * Real Redis deployments beyond one server, started by the tests on free loopback ports in
 * temporary directories (never a mock), every wait bounded, everything killed and removed when
 * the process exits:
 * - `startSentinelSet()`: a primary, a replica and three sentinels watching them (quorum 2,
 *   down-after 1 s, so a killed primary is replaced within a few seconds);
 * It offers `killPrimary()` (kill -9 of the current primary) and `waitPromoted()` (a replica
 * has taken over), for the failover tests.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from 'redis';
import { freePort, portOpen, startRedis, type RedisServer } from './redis.js';
import { eventually } from './wait.js';

export const sentinelMaster = 'edgeplane';

/** One command to 127.0.0.1:port on a short-lived connection; undefined when it cannot be sent. */
export async function ask(port: number, args: string[]): Promise<unknown> {
  return (await askAll(port, [args]))?.at(-1);
}

/** Commands in order on one short-lived connection (WAIT counts its connection's writes). */
export async function askAll(port: number, commands: string[][]): Promise<unknown[] | undefined> {
  const c = createClient({ socket: { host: '127.0.0.1', port, reconnectStrategy: false, connectTimeout: 2000 } });
  c.on('error', () => undefined);
  try {
    await c.connect();
    const out: unknown[] = [];
    for (const args of commands) out.push(await c.sendCommand(args));
    return out;
  } catch {
    return undefined;
  } finally {
    if (c.isOpen) c.destroy();
  }
}

const children = new Set<ChildProcess>();
const dirs: string[] = [];
process.once('exit', () => {
  for (const c of children) c.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

export type SentinelSet = {
  /** The environment that names this deployment to edgeplane (CONTRACT §10). */
  env: { REDIS_SENTINELS: string; REDIS_SENTINEL_MASTER: string };
  sentinels: { host: string; port: number }[];
  master: string;
  servers: RedisServer[];
  /** The port of the current primary, as the sentinels name it. */
  primaryPort(): Promise<number>;
  /** kill -9 of the current primary; resolves with its port. */
  killPrimary(): Promise<number>;
  /** Waits until the sentinels name a primary other than `oldPort` and it answers as primary. */
  waitPromoted(oldPort: number, timeoutMs?: number): Promise<number>;
  dispose(): Promise<void>;
};

async function masterAddr(port: number): Promise<number | undefined> {
  const r = await ask(port, ['SENTINEL', 'GET-MASTER-ADDR-BY-NAME', sentinelMaster]);
  return Array.isArray(r) && r.length === 2 ? Number(r[1]) : undefined;
}

async function role(port: number): Promise<string | undefined> {
  const r = await ask(port, ['ROLE']);
  return Array.isArray(r) ? String(r[0]) : undefined;
}

export async function startSentinelSet(): Promise<SentinelSet> {
  // Unreferenced: a set shared by a file's suites must not keep the process alive (killed at exit).
  const primary = await startRedis({ unref: true });
  const replica = await startRedis({ unref: true, args: ['--replicaof', '127.0.0.1', String(primary.port)] });
  const servers = [primary, replica];
  const dir = mkdtempSync(join(tmpdir(), 'edgeplane-sentinel-'));
  dirs.push(dir);
  const ports: number[] = [];
  const procs: ChildProcess[] = [];
  for (let i = 0; i < 3; i++) {
    const port = await freePort();
    const conf = join(dir, `sentinel-${i}.conf`);
    writeFileSync(
      conf,
      [
        `port ${port}`,
        'bind 127.0.0.1',
        `dir ${dir}`,
        `sentinel monitor ${sentinelMaster} 127.0.0.1 ${primary.port} 2`,
        `sentinel down-after-milliseconds ${sentinelMaster} 1000`,
        `sentinel failover-timeout ${sentinelMaster} 5000`,
        `sentinel parallel-syncs ${sentinelMaster} 1`,
        '',
      ].join('\n'),
    );
    const child = spawn('redis-server', [conf, '--sentinel', '--loglevel', 'warning'], { stdio: 'ignore' });
    child.unref();
    children.add(child);
    procs.push(child);
    ports.push(port);
    await eventually(() => portOpen(port), `sentinel listening on ${port}`, 10_000);
  }
  await eventually(
    async () => {
      // The replica is online when it confirms a write (WAIT), not merely connected.
      const acked = await askAll(primary.port, [
        ['SET', 'edgeplane-test:replication', String(Date.now())],
        ['WAIT', '1', '500'],
      ]);
      if (Number(acked?.[1]) !== 1) return false;
      for (const p of ports) {
        const others = await ask(p, ['SENTINEL', 'SENTINELS', sentinelMaster]);
        const replicas = await ask(p, ['SENTINEL', 'REPLICAS', sentinelMaster]);
        if (!Array.isArray(others) || others.length !== 2 || !Array.isArray(replicas) || replicas.length !== 1)
          return false;
      }
      return true;
    },
    'sentinels that know each other and the replica',
    20_000,
  );
  const set: SentinelSet = {
    env: { REDIS_SENTINELS: ports.map((p) => `127.0.0.1:${p}`).join(','), REDIS_SENTINEL_MASTER: sentinelMaster },
    sentinels: ports.map((port) => ({ host: '127.0.0.1', port })),
    master: sentinelMaster,
    servers,
    async primaryPort() {
      for (const p of ports) {
        const m = await masterAddr(p);
        if (m) return m;
      }
      throw new Error('no sentinel names a primary');
    },
    async killPrimary() {
      const port = await set.primaryPort();
      const s = servers.find((x) => x.port === port);
      if (!s) throw new Error(`the primary ${port} is not one of this set's servers`);
      await s.stop({ hard: true });
      return port;
    },
    async waitPromoted(oldPort, timeoutMs = 30_000) {
      let found = 0;
      await eventually(
        async () => {
          const m = await masterAddr(ports[0]!);
          if (!m || m === oldPort || (await role(m)) !== 'master') return false;
          found = m;
          return true;
        },
        `a replica promoted in place of ${oldPort}`,
        timeoutMs,
      );
      return found;
    },
    async dispose() {
      for (const c of procs) {
        c.kill('SIGKILL');
        children.delete(c);
      }
      await Promise.all(servers.map((s) => s.dispose()));
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return set;
}

export type RedisClusterSet = {
  /** The environment that names this deployment to edgeplane (CONTRACT §10). */
  env: { REDIS_CLUSTER: string };
  /** The seed nodes (every node of the cluster, primaries and replicas). */
  nodes: { host: string; port: number }[];
  servers: RedisServer[];
  /** The port of the primary that serves `key`'s slot now. */
  primaryOf(key: string): Promise<number>;
  /** The ports of the primaries now. */
  primaries(): Promise<number[]>;
  /** The port of a replica of the primary that serves `key`'s slot. */
  replicaOf(key: string): Promise<number>;
  /** kill -9 of the primary that serves `key`'s slot; resolves with its port. */
  killPrimaryOf(key: string): Promise<number>;
  /** Waits until a replica serves `key`'s slot in place of `oldPort` and the cluster is ok. */
  waitPromoted(key: string, oldPort: number, timeoutMs?: number): Promise<number>;
  /** FLUSHALL on every primary. */
  flush(): Promise<void>;
  stop(): Promise<void>;
};

function clusterInfoOk(reply: unknown): boolean {
  return typeof reply === 'string' && /^cluster_state:ok/m.test(reply);
}

/** The primary serving `key`'s slot, as the node at `port` sees it (CLUSTER KEYSLOT + SLOTS). */
async function slotOwner(port: number, key: string): Promise<number | undefined> {
  const slot = Number(await ask(port, ['CLUSTER', 'KEYSLOT', key]));
  const slots = await ask(port, ['CLUSTER', 'SLOTS']);
  if (!Number.isInteger(slot) || !Array.isArray(slots)) return undefined;
  for (const range of slots as unknown[][]) {
    if (Number(range[0]) <= slot && slot <= Number(range[1])) return Number((range[2] as unknown[])[1]);
  }
  return undefined;
}

/**
 * A Redis Cluster of three primaries and three replicas (`redis-server --cluster-enabled yes`,
 * `redis-cli --cluster create … --cluster-replicas 1`), node timeout 1 s so a killed primary's
 * replica takes over within a few seconds (`debug`: DEBUG allowed, to freeze a replica with
 * DEBUG SLEEP). Resolves once every node says `cluster_state:ok`
 * and every primary has its replica online. Usable from scripts: `env`/`nodes` name it,
 * `stop()` kills and removes everything.
 */
export async function startRedisCluster(opts: { unref?: boolean; debug?: boolean } = {}): Promise<RedisClusterSet> {
  // A port taken between its choice and the server's start (a shared machine) fails the
  // creation: one more attempt with new ports.
  try {
    return await tryStartCluster(opts);
  } catch {
    return tryStartCluster(opts);
  }
}

/** Can 127.0.0.1:port be bound now? */
function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/** A free port whose cluster bus port (port + 10000) is free too. */
async function freeClusterPort(): Promise<number> {
  for (let i = 0; i < 100; i++) {
    const p = await freePort();
    if (p + 10000 <= 65535 && (await bindable(p + 10000))) return p;
  }
  throw new Error('no free port with a free cluster bus port');
}

async function tryStartCluster(opts: { unref?: boolean; debug?: boolean }): Promise<RedisClusterSet> {
  const servers: RedisServer[] = [];
  for (let i = 0; i < 6; i++)
    servers.push(
      await startRedis({
        port: await freeClusterPort(),
        unref: opts.unref ?? true,
        args: [
          ...['--cluster-enabled', 'yes', '--cluster-node-timeout', '1000', '--cluster-config-file', 'nodes.conf'],
          ...(opts.debug ? ['--enable-debug-command', 'yes'] : []),
        ],
      }),
    );
  const ports = servers.map((s) => s.port);
  const nodes = ports.map((port) => ({ host: '127.0.0.1', port }));
  const stop = async () => {
    await Promise.all(servers.map((s) => s.dispose()));
  };
  try {
    await new Promise<void>((resolve, reject) => {
      const args = ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '1'];
      const child = spawn('redis-cli', [...args, '--cluster-yes'], { stdio: ['ignore', 'ignore', 'pipe'] });
      let err = '';
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      child.on('exit', (code) => {
        clearTimeout(timer);
        if (code === 0) resolve();
        else reject(new Error(`redis-cli --cluster create exited ${code}: ${err.trim()}`));
      });
    });
    await eventually(
      async () => {
        for (const p of ports) if (!clusterInfoOk(await ask(p, ['CLUSTER', 'INFO']))) return false;
        // Every primary has its replica online (it confirms a write in its slot).
        for (const p of ports) {
          const r = await ask(p, ['ROLE']);
          if (!Array.isArray(r) || r[0] !== 'master') continue;
          if (!Array.isArray(r[2]) || r[2].length < 1) return false;
        }
        return true;
      },
      'a Redis Cluster with cluster_state:ok and a replica per primary',
      30_000,
    );
  } catch (err) {
    await stop();
    throw err;
  }
  const anyOk = async (): Promise<number> => {
    for (const p of ports) if (clusterInfoOk(await ask(p, ['CLUSTER', 'INFO']))) return p;
    throw new Error('no node of the cluster answers cluster_state:ok');
  };
  const set: RedisClusterSet = {
    env: { REDIS_CLUSTER: nodes.map((n) => `${n.host}:${n.port}`).join(',') },
    nodes,
    servers,
    async primaryOf(key) {
      const owner = await slotOwner(await anyOk(), key);
      if (owner === undefined) throw new Error(`no primary serves the slot of ${key}`);
      return owner;
    },
    async primaries() {
      const out: number[] = [];
      for (const p of ports) {
        const r = await ask(p, ['ROLE']);
        if (Array.isArray(r) && r[0] === 'master') out.push(p);
      }
      return out;
    },
    async replicaOf(key) {
      const primary = await set.primaryOf(key);
      for (const p of ports) {
        const r = await ask(p, ['ROLE']);
        if (Array.isArray(r) && r[0] === 'slave' && Number(r[2]) === primary) return p;
      }
      throw new Error(`the primary ${primary} of ${key} has no replica`);
    },
    async killPrimaryOf(key) {
      const port = await set.primaryOf(key);
      await servers.find((s) => s.port === port)!.stop({ hard: true });
      return port;
    },
    async waitPromoted(key, oldPort, timeoutMs = 30_000) {
      let found = 0;
      await eventually(
        async () => {
          for (const p of ports) {
            if (p === oldPort || !clusterInfoOk(await ask(p, ['CLUSTER', 'INFO']))) continue;
            const owner = await slotOwner(p, key);
            if (owner === undefined || owner === oldPort || (await role(owner)) !== 'master') return false;
            found = owner;
            return true;
          }
          return false;
        },
        `a replica serving ${key} in place of ${oldPort}`,
        timeoutMs,
      );
      return found;
    },
    async flush() {
      for (const p of await set.primaries()) await ask(p, ['FLUSHALL']);
    },
    stop,
  };
  return set;
}
