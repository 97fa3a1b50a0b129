/**
 * A command the tests need from a Debian package (tmux, chromium): found on the PATH, or
 * installed with apt-get when missing and we are root (as redis.ts does for redis-server).
 */
import { spawnSync } from 'node:child_process';

export function hasCommand(command: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' }).status === 0;
}

export function ensureCommand(command: string, debPackage: string): void {
  if (hasCommand(command)) return;
  if (process.getuid?.() !== 0) throw new Error(`${command} is not installed; install Debian's ${debPackage} package`);
  process.stderr.write(`${command} missing: installing ${debPackage} with apt-get\n`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  spawnSync('apt-get', ['update', '-qq'], { stdio: 'inherit', env });
  const r = spawnSync('apt-get', ['install', '-y', '-qq', debPackage], { stdio: 'inherit', env });
  if (r.status !== 0 || !hasCommand(command)) throw new Error(`apt-get install ${debPackage} failed`);
}
