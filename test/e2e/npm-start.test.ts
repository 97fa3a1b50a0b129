/**
 * `npm start` as a user runs it: it builds the esbuild bundle and runs that (no TypeScript
 * loader), prints where it listens and how to log in, and SIGTERM or SIGINT sent to npm
 * stops the service — drained, exit 0, nothing left holding the port.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, portOpen } from '../helpers/redis.js';
import { startServe } from '../helpers/serve-proc.js';
import { eventually } from '../helpers/wait.js';

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

/** Command lines of a process's descendants (Linux /proc). */
function descendants(pid: number): string[] {
  const out: string[] = [];
  let children: string[] = [];
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean);
  } catch {
    return out;
  }
  for (const c of children) {
    try {
      out.push(readFileSync(`/proc/${c}/cmdline`, 'utf8').split('\0').join(' ').trim());
    } catch {
      /* gone */
    }
    out.push(...descendants(Number(c)));
  }
  return out;
}

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  test(`npm start runs the bundle; ${signal} to npm drains and exits 0, freeing the port`, async () => {
    const port = await freePort();
    const p = startServe(
      {
        PORT: String(port),
        DATA_DIR: mkdtempSync(join(tmpdir(), 'edgeplane-npm-start-')),
        ADMIN_PASSWORD: 'npm-start-pw',
      },
      npm,
      ['start', '--silent'],
    );
    try {
      assert.is(await p.listening(120_000), port);
      assert.match(p.output(), /bundle: build\/edgeplane\.cjs/);
      const listening = p.lines().find((l) => String(l.msg).startsWith('edgeplane listening'));
      assert.match(String(listening?.msg), /log in: POST \/v1\/login/);
      const running = descendants(p.child.pid as number);
      assert.ok(
        running.some((c) => /edgeplane\.cjs/.test(c)),
        `runs the bundle: ${JSON.stringify(running)}`,
      );
      assert.not.ok(
        running.some((c) => /tsx/.test(c)),
        `no TypeScript loader: ${JSON.stringify(running)}`,
      );
      p.kill(signal);
      assert.is(await p.exited(), 0, p.output());
      assert.ok(
        p.lines().some((l) => String(l.msg).startsWith(`${signal}: stopping`)),
        'the service itself got the signal',
      );
      await eventually(async () => !(await portOpen(port)), `nothing holds port ${port} after npm exited`, {
        timeoutMs: 15_000,
        everyMs: 100,
      });
    } finally {
      p.kill('SIGKILL');
    }
  });
}

test.run();
