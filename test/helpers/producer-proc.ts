/**
 * A producer in its own process (the failover tests' load, not competing with the test's own
 * event loop): it XADDs `payload=seq-<n>` to `volga:<topic>` keeping to `rate` messages a
 * second since its start, in pipelined batches, each followed by WAIT 1 on the stream's node;
 * a batch a replica confirmed is printed as `ok <first> <last>` (as a produce answered 2xx
 * would be), then `end <sent> <ms>` after `durationMs`. Failed batches (the failover) are not
 * printed: they count as not produced. Every loop is bounded by `durationMs`.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { redisClient, send, type RedisTarget } from '../../src/lib/redis.js';

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
  const producer = redisClient(JSON.parse(targetJson) as RedisTarget, 'test-producer');
  await producer.connect();
  const started = Date.now();
  let seq = 0;
  while (Date.now() - started < durationMs) {
    const due = Math.floor(((Date.now() - started) * rate) / 1000) - seq;
    const batch = Array.from({ length: Math.min(500, Math.max(1, due)) }, () => seq++);
    try {
      await Promise.all(batch.map((n) => send(producer, ['XADD', key, '*', 'payload', `seq-${n}`])));
      if (Number(await send(producer, ['WAIT', '1', '1000'], key)) >= 1)
        process.stdout.write(`ok ${batch[0]} ${batch.at(-1)}\n`);
    } catch {
      /* not produced: the failover */
    }
    await new Promise((r) => setTimeout(r, 5));
  }
  process.stdout.write(`end ${seq} ${Date.now() - started}\n`);
  await Promise.resolve(producer.destroy());
  process.exit(0);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [targetJson, topic, rate, ms] = process.argv.slice(2);
  void main(targetJson!, topic!, Number(rate), Number(ms));
}
