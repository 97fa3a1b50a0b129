/**
 * An edge site prints no password it will refuse (CONTRACT §7: once a site syncs, its users are
 * the control plane's). Its first start without ADMIN_PASSWORD generates no admin password and
 * announces none; a control plane (or single machine) still generates and prints one.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadSettings } from '../../src/lib/settings.js';
import { createInstance } from '../../src/main/server.js';
import { tempDir } from '../helpers/backends.js';

async function announced(env: Record<string, string>): Promise<string[]> {
  const lines: string[] = [];
  const settings = loadSettings({ DATA_DIR: tempDir('edgeplane-edge-admin-'), LOG_LEVEL: 'error', ...env });
  const instance = await createInstance(settings, { runtime: false, announce: (l) => lines.push(l) });
  try {
    const login = await instance.app.fetch(
      new Request('http://edgeplane.test/v1/login', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username: 'admin', password: 'anything-at-all' }),
      }),
    );
    assert.is(login.status, 401, 'no local admin to log in as');
  } finally {
    await instance.close(1000);
  }
  return lines;
}

test('an edge site without ADMIN_PASSWORD generates and prints no admin password', async () => {
  const lines = await announced({
    CONTROL_PLANE_URL: 'http://127.0.0.1:1',
    SITE: 'edge-x',
    SITE_TOKEN: 'not-a-real-token',
  });
  assert.equal(lines, []);
});

test('a control plane without ADMIN_PASSWORD still prints its generated password once', async () => {
  const lines = await announced({ SITE: 'hq' });
  assert.is(lines.length, 1);
  assert.match(lines[0] ?? '', /generated a password for user admin/);
});

test.run();
