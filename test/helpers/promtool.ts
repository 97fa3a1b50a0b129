/**
 * `promtool check metrics` (Debian's `prometheus` package, installed with apt-get when missing
 * and we are root): the problems it finds in a /metrics text, and its exit code.
 */
import { spawnSync } from 'node:child_process';
import { ensureCommand } from './apt.js';

/** Installs promtool when missing (apt-get: it blocks this process while it runs). */
export function ensurePromtool(): void {
  ensureCommand('promtool', 'prometheus');
}

export function promtoolCheck(text: string): { status: number | null; output: string } {
  ensurePromtool();
  const r = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8', timeout: 30_000 });
  return { status: r.status, output: `${r.stdout ?? ''}${r.stderr ?? ''}` };
}
