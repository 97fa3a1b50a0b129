/**
 * The embedded store's files are the owner's alone: DATA_DIR is made 0700 and its files 0600
 * (they hold password hashes, the audit trail and every message of the embedded bus), whatever
 * the umask.
 */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { prepareDataDir } from '../../src/main/data-dir.js';
import { createInstance } from '../../src/main/server.js';
import { loadSettings } from '../../src/lib/settings.js';
import { tempDir } from '../helpers/backends.js';

const mode = (path: string) => (statSync(path).mode & 0o777).toString(8);

test('DATA_DIR 0700, store.aof and bus.jsonl 0600', async () => {
  const dir = join(tempDir('edgeplane-modes-'), 'new', 'data');
  const umask = process.umask(0o022);
  try {
    prepareDataDir(dir);
    const inst = await createInstance(
      loadSettings({ DATA_DIR: dir, ADMIN_PASSWORD: 'admin-password-1', LOG_LEVEL: 'error' }),
      { runtime: false, announce: () => {} },
    );
    await inst.close(1000);
  } finally {
    process.umask(umask);
  }
  assert.is(mode(dir), '700');
  assert.is(mode(join(dir, 'store.aof')), '600');
  assert.is(mode(join(dir, 'bus.jsonl')), '600');
});

test.run();
