/**
 * A producer in its own process (the failover tests' load, not competing with the test's own
 * event loop): it XADDs `payload=seq-<n>` to `volga:<topic>` keeping to `rate` messages a
 * second since its start, in pipelined batches, each confirmed as the product's produce
 * confirms a write (`replicaConfirmation`: WAIT 1 on the stream's node while that primary has a
 * replica; a promoted replica left without one does not wait). A confirmed batch is printed as
 * `ok <first> <last>` (as a produce answered 2xx would be), then `end <sent> <ms>` after
 * `durationMs`. Failed batches (the failover) are not printed: they count as not produced.
 * Every loop is bounded by `durationMs`.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { redisClient, replicaConfirmation, send, type RedisTarget } from '../../src/lib/redis.js';

export type ProducerRun = {
  /** The sequence numbers confirmed so far. */
  confirmed: number[];
  /** Resolves at the end with the number sent and the window's length. */
  done: Promise<{ sent: number; ms: number }>;
  kill(): void;
};

export function startProducer(target: RedisTarget, topic: string, rate: number, durationMs: number): ProducerRun {
  const self = fileURLToPath(import.meta.url);
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', self, JSON.stringify(target), topic, String(rate), String(durationMs)],
    { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, LOG_LEVEL: 'error' } },
  );
  const confirmed: number[] = [];
  let end: { sent: number; ms: number } | undefined;
  createInterface({ input: child.stdout }).on('line', (line) => {
    const [kind, a, b] = line.split(' ');
    if (kind === 'ok') for (let n = Number(a); n <= Number(b); n++) confirmed.push(n);
    if (kind === 'end') end = { sent: Number(a), ms: Number(b) };
  });
  const done = new Promise<{ sent: number; ms: number }>((resolve, reject) => {
    child.on('exit', (code) =>
      end ? resolve(end) : reject(new Error(`the producer exited ${code} without its end line`)),
    );
  });
  return { confirmed, done, kill: () => child.kill('SIGKILL') };
}

async function main(targetJson: string, topic: string, rate: number, durationMs: number): Promise<void> {
  const key = `volga:${topic}`;
  const target = JSON.parse(targetJson) as RedisTarget;
  const producer = redisClient(target, 'test-producer');
  await producer.connect();
  const confirm = replicaConfirmation(producer, target);
  const started = Date.now();
  let seq = 0;
  while (Date.now() - started < durationMs) {
    const due = Math.floor(((Date.now() - started) * rate) / 1000) - seq;
    if (due <= 0) {
      await new Promise((r) => setTimeout(r, 5));
      continue;
    }
    const batch = Array.from({ length: Math.min(500, due) }, () => seq++);
    try {
      await Promise.all(batch.map((n) => send(producer, ['XADD', key, '*', 'payload', `seq-${n}`])));
      await confirm(key);
      process.stdout.write(`ok ${batch[0]} ${batch.at(-1)}\n`);
    } catch {
      await new Promise((r) => setTimeout(r, 50)); // not produced: the failover
    }
  }
  process.stdout.write(`end ${seq} ${Date.now() - started}\n`);
  await Promise.resolve(producer.destroy());
  process.exit(0);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [targetJson, topic, rate, ms] = process.argv.slice(2);
  void main(targetJson!, topic!, Number(rate), Number(ms));
}
