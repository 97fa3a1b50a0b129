/**
 * The secret settings are checked before anything is written, each a SettingsError naming the
 * setting (one line and exit 1 at start): a STRONGBOX_KEY that is not 32 bytes (the process
 * started sealed before), STRONGBOX_KEY beside STRONGBOX_KEY_FILE (the file was never looked
 * at), an ADMIN_PASSWORD the API would refuse (x was accepted), a site token with whitespace
 * (it could never be sent; the site retried with a confusing 401 for ever). The value itself is
 * never in the message.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadSettings, SettingsError } from '../../src/lib/settings.js';

const key = Buffer.alloc(32, 7).toString('base64');
const site = { CONTROL_PLANE_URL: 'http://127.0.0.1:9', SITE: 'e1' };

const refused: Array<[string, NodeJS.ProcessEnv, string, RegExp]> = [
  ['a short key', { STRONGBOX_KEY: 'short' }, 'STRONGBOX_KEY', /must be 32 bytes in base64 \(got 3 bytes\)/],
  ['a 16-byte key', { STRONGBOX_KEY: Buffer.alloc(16, 1).toString('base64') }, 'STRONGBOX_KEY', /got 16 bytes/],
  ['both key settings', { STRONGBOX_KEY: key, STRONGBOX_KEY_FILE: '/etc/hostname' }, 'STRONGBOX_KEY', /not both/],
  ['a 1-character admin password', { ADMIN_PASSWORD: 'x' }, 'ADMIN_PASSWORD', /8 to 1024 characters/],
  ['a site token with a space', { ...site, SITE_TOKEN: 'bad token' }, 'SITE_TOKEN', /whitespace/],
];

for (const [what, env, setting, message] of refused) {
  test(`${what}: SettingsError naming ${setting}`, () => {
    try {
      loadSettings(env);
      assert.unreachable('accepted');
    } catch (err) {
      assert.instance(err, SettingsError);
      assert.is((err as SettingsError).setting, setting);
      assert.match((err as Error).message, message);
      for (const v of Object.values(env))
        if (v && v.length > 2 && !v.startsWith('/') && !v.startsWith('http'))
          assert.not.ok((err as Error).message.includes(v), 'the value is not shown');
    }
  });
}

test('TENANT must be a tenant name: x/y would split every key and topic (exporters silently stopped)', () => {
  for (const bad of ['x/y', 'with space', '-lead']) {
    try {
      loadSettings({ TENANT: bad });
      assert.unreachable(`accepted ${bad}`);
    } catch (err) {
      assert.instance(err, SettingsError);
      assert.is((err as SettingsError).setting, 'TENANT');
    }
  }
  assert.is(loadSettings({ TENANT: 'acme.corp_1' }).tenant, 'acme.corp_1');
});

test('good values pass', () => {
  const s = loadSettings({ STRONGBOX_KEY: key, ADMIN_PASSWORD: 'eight-ch' });
  assert.is(s.strongboxKey, key);
  assert.is(s.adminPassword, 'eight-ch');
});

test.run();
