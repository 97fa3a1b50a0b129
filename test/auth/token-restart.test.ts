/**
 * A login survives a restart of the embedded store (the token's record is a durable kv value
 * with its expiry); so does a revocation (a refresh revokes the token it replaces), and the
 * token itself is not in the file (only its hash).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startServe, type ServeProc } from '../helpers/serve-proc.js';
import { tempDir } from '../helpers/backends.js';

const password = 'restart-test-password';

async function start(dataDir: string): Promise<{ proc: ServeProc; url: string }> {
  const proc = startServe({ PORT: '0', DATA_DIR: dataDir, ADMIN_PASSWORD: password });
  const port = await proc.listening();
  return { proc, url: `http://127.0.0.1:${port}` };
}

async function stop(proc: ServeProc): Promise<void> {
  proc.kill('SIGTERM');
  assert.is(await proc.exited(), 0, proc.output());
}

const get = (url: string, token: string) =>
  fetch(`${url}/v1/config/sites`, { headers: { authorization: `Bearer ${token}` } }).then(async (r) => {
    await r.body?.cancel();
    return r.status;
  });

test('a token from before a restart still works after it; a token revoked before it does not', async () => {
  const dataDir = tempDir('edgeplane-token-restart-');
  let { proc, url } = await start(dataDir);
  const login = async () => {
    const r = await fetch(`${url}/v1/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'admin', password }),
    });
    assert.is(r.status, 200);
    return ((await r.json()) as { token: string }).token;
  };
  const kept = await login();
  const dropped = await login();
  try {
    assert.is(await get(url, kept), 200);
    const refreshed = await fetch(`${url}/v1/state/strongbox/token/refresh`, {
      method: 'POST',
      headers: { authorization: `Bearer ${dropped}` },
    });
    assert.is(refreshed.status, 200);
    const renewed = ((await refreshed.json()) as { token: string }).token;
    assert.is(await get(url, dropped), 401, 'revoked by the refresh');
    await stop(proc);
    const file = readFileSync(join(dataDir, 'store.aof'), 'utf8');
    assert.not.ok(file.includes(kept), 'the token itself is not in the file');

    ({ proc, url } = await start(dataDir));
    assert.is(await get(url, kept), 200, 'the login survived the restart');
    assert.is(await get(url, dropped), 401, 'the revocation did too');
    assert.is(await get(url, renewed), 200);
  } finally {
    proc.kill('SIGKILL');
  }
});

test.run();
