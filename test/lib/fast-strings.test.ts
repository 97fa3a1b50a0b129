/**
 * String.prototype stays in V8's fast mode once the entry (worker.ts) is loaded, though it loads
 * node-redis, whose `class VerbatimString extends String` alone turns it into a dictionary (every
 * string method then a slow lookup in the whole process). Checked in a child node with
 * --allow-natives-syntax (%HasFastProperties), the entry loaded without running main.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';

function fastAfter(module: string): string {
  return execFileSync(
    process.execPath,
    [
      '--allow-natives-syntax',
      '--import',
      'tsx',
      '--input-type=module',
      '-e',
      `await import(${JSON.stringify(module)}); console.log(%HasFastProperties(String.prototype))`,
    ],
    { env: { ...process.env, EDGEPLANE_NO_MAIN: '1' }, encoding: 'utf8', timeout: 60_000 },
  ).trim();
}

test('node-redis alone makes String.prototype a dictionary (what the entry guards against)', () => {
  assert.is(fastAfter('redis'), 'false');
});

test('with the entry loaded, String.prototype is still fast', () => {
  assert.is(fastAfter('./worker.ts'), 'true');
});

test.run();
