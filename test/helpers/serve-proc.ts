/**
 * edgeplane as a user runs it, in a child process: `node --import tsx worker.ts` by default,
 * or any command (`npm start`, the bundle, the executable). Collects its JSON log lines, waits
 * for a line or for the exit, sends signals. Every wait is bounded.
 */
import { spawn, type ChildProcess } from 'node:child_process';

export type LogLine = { level?: string; msg?: string; [k: string]: unknown };

export type ServeProc = {
  child: ChildProcess;
  /** Every JSON line printed on stdout so far. */
  lines(): LogLine[];
  /** Everything printed (stdout and stderr), for failure messages. */
  output(): string;
  /** Resolves with the first line (past or future) matching `pred`; rejects after timeoutMs or at exit. */
  waitLine(pred: (l: LogLine) => boolean, timeoutMs?: number): Promise<LogLine>;
  /** Resolves with the port of the "edgeplane listening" line. */
  listening(timeoutMs?: number): Promise<number>;
  /** Resolves with the exit code (or the signal's name) once the process ended. */
  exited(timeoutMs?: number): Promise<number | string>;
  kill(signal?: NodeJS.Signals): void;
};

export const root = new URL('../..', import.meta.url).pathname;

export function startServe(
  env: Record<string, string>,
  command: string = process.execPath,
  args: string[] = ['--import', 'tsx', 'worker.ts'],
): ServeProc {
  const base: NodeJS.ProcessEnv = { ...process.env };
  delete base.REDIS_URL; // only what the test gives
  const child = spawn(command, args, {
    cwd: root,
    env: { ...base, HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let pending = '';
  const lines: LogLine[] = [];
  const waiters = new Set<() => void>();
  const poke = () => {
    for (const w of [...waiters]) w();
  };
  child.stdout?.on('data', (d: Buffer) => {
    out += d.toString();
    pending += d.toString();
    const parts = pending.split('\n');
    pending = parts.pop() ?? '';
    for (const p of parts) {
      try {
        const v = JSON.parse(p) as unknown;
        if (v && typeof v === 'object') lines.push(v as LogLine);
      } catch {
        /* not a JSON line */
      }
    }
    poke();
  });
  child.stderr?.on('data', (d: Buffer) => {
    out += d.toString();
  });
  let exit: number | string | undefined;
  child.once('exit', (code, signal) => {
    exit = code ?? signal ?? 'unknown';
    poke();
  });

  const waitFor = <T>(check: () => T | undefined, what: string, timeoutMs: number, failOnExit: boolean) =>
    new Promise<T>((resolve, reject) => {
      const done = () => {
        const v = check();
        if (v !== undefined) {
          finish();
          resolve(v);
        } else if (failOnExit && exit !== undefined) {
          finish();
          reject(new Error(`exited (${exit}) before ${what}; output:\n${out}`));
        }
      };
      const timer = setTimeout(() => {
        finish();
        reject(new Error(`timed out waiting for ${what}; output:\n${out}`));
      }, timeoutMs);
      const finish = () => {
        clearTimeout(timer);
        waiters.delete(done);
      };
      waiters.add(done);
      done();
    });

  const proc: ServeProc = {
    child,
    lines: () => lines,
    output: () => out,
    waitLine: (pred, timeoutMs = 60_000) => waitFor(() => lines.find(pred), 'a log line', timeoutMs, true),
    async listening(timeoutMs = 60_000) {
      const l = await proc.waitLine(
        (x) => typeof x.msg === 'string' && x.msg.startsWith('edgeplane listening'),
        timeoutMs,
      );
      return Number(l.port);
    },
    exited: (timeoutMs = 60_000) => waitFor(() => exit, 'the exit', timeoutMs, false),
    kill(signal = 'SIGTERM') {
      if (exit === undefined) child.kill(signal);
    },
  };
  return proc;
}
