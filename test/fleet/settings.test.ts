/**
 * Fleet roles and settings: without CONTROL_PLANE_URL a process is a control plane (its own
 * site SITE, as before the fleet); with it an edge site that needs SITE and a token. The
 * program itself refuses bad fleet settings with exit code 2 and a message naming them.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadSettings, SettingsError } from '../../src/lib/settings.js';

const dir = mkdtempSync(join(tmpdir(), 'edgeplane-fleet-settings-'));
process.once('exit', () => rmSync(dir, { recursive: true, force: true }));

test('without CONTROL_PLANE_URL: a control plane, history 7 days by default', () => {
  const s = loadSettings({ SITE: 'hq' });
  assert.is(s.fleet.controlPlaneUrl, undefined);
  assert.is(s.site, 'hq');
  assert.is(s.fleet.historyMs, 7 * 86_400_000);
  assert.is(loadSettings({ FLEET_HISTORY: '90s' }).fleet.historyMs, 90_000);
  assert.is(loadSettings({ FLEET_HISTORY: '12h' }).fleet.historyMs, 12 * 3_600_000);
});

test('FLEET_KEEPALIVE (15 s) and FLEET_REPORT_INTERVAL (500 ms): durations with a floor; FLEET_ACKS (stream)', () => {
  const s = loadSettings({ SITE: 'hq' });
  assert.is(s.fleet.keepAliveMs, 15_000);
  assert.is(s.fleet.reportIntervalMs, 500);
  const e = { CONTROL_PLANE_URL: 'http://127.0.0.1:1', SITE: 'e', SITE_TOKEN: 't' };
  assert.is(loadSettings({ ...e, FLEET_REPORT_INTERVAL: '2s' }).fleet.reportIntervalMs, 2000);
  assert.is(loadSettings({ FLEET_KEEPALIVE: '300ms' }).fleet.keepAliveMs, 300);
  assert.throws(() => loadSettings({ FLEET_KEEPALIVE: '10ms' }), /FLEET_KEEPALIVE must be at least 100 ms/);
  assert.throws(() => loadSettings({ FLEET_REPORT_INTERVAL: 'soon' }), /FLEET_REPORT_INTERVAL must be a number/);
  assert.is(s.fleet.acks, 'stream');
  assert.is(loadSettings({ ...e, FLEET_ACKS: 'post' }).fleet.acks, 'post');
});

test('an edge site: URL, SITE and a token from SITE_TOKEN or SITE_TOKEN_FILE, CA read from its file', () => {
  const s = loadSettings({ CONTROL_PLANE_URL: 'https://cp.example:4646/', SITE: 'edge-1', SITE_TOKEN: 'tok' });
  assert.equal(s.fleet.controlPlaneUrl, 'https://cp.example:4646');
  assert.is(s.fleet.siteToken, 'tok');
  const tokenFile = join(dir, 'token');
  writeFileSync(tokenFile, 'from-file\n');
  const caFile = join(dir, 'ca.pem');
  writeFileSync(caFile, '-----BEGIN CERTIFICATE-----\n');
  const f = loadSettings({
    CONTROL_PLANE_URL: 'http://127.0.0.1:1',
    SITE: 'edge-1',
    SITE_TOKEN_FILE: tokenFile,
    CONTROL_PLANE_CA: caFile,
  });
  assert.is(f.fleet.siteToken, 'from-file');
  assert.is(f.fleet.controlPlaneCa, '-----BEGIN CERTIFICATE-----\n');
});

test('bad fleet settings are refused, naming the setting', () => {
  const cases: Array<[Record<string, string>, RegExp]> = [
    [{ CONTROL_PLANE_URL: 'ftp://x', SITE: 'a', SITE_TOKEN: 't' }, /CONTROL_PLANE_URL must be http/],
    [{ CONTROL_PLANE_URL: 'not a url', SITE: 'a', SITE_TOKEN: 't' }, /CONTROL_PLANE_URL is not a URL/],
    [{ CONTROL_PLANE_URL: 'http://x', SITE_TOKEN: 't' }, /SITE must name/],
    [{ CONTROL_PLANE_URL: 'http://x', SITE: 'a' }, /SITE_TOKEN or SITE_TOKEN_FILE/],
    [{ CONTROL_PLANE_URL: 'http://x', SITE: 'a', SITE_TOKEN: 't', SITE_TOKEN_FILE: '/x' }, /not both/],
    [{ CONTROL_PLANE_URL: 'http://x', SITE: 'a', SITE_TOKEN_FILE: join(dir, 'nope') }, /SITE_TOKEN_FILE: cannot read/],
    [{ FLEET_HISTORY: '7 days' }, /FLEET_HISTORY must be a number and a unit/],
    [{ FLEET_HISTORY: '0s' }, /FLEET_HISTORY must be at least/],
    [{ FLEET_ACKS: 'http' }, /FLEET_ACKS must be stream or post, got "http"/],
  ];
  for (const [env, message] of cases) {
    assert.throws(
      () => loadSettings(env),
      (err: unknown) => err instanceof SettingsError && message.test(err.message),
      JSON.stringify(env),
    );
  }
});

test('the program exits 1 with one line naming SITE_TOKEN when an edge site has no token', async () => {
  const child = spawn(process.execPath, ['--import', 'tsx', 'worker.ts'], {
    env: {
      ...process.env,
      PORT: '0',
      HOST: '127.0.0.1',
      DATA_DIR: dir,
      CONTROL_PLANE_URL: 'http://127.0.0.1:1',
      SITE: 'e',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  // A start-up failure is one JSON line naming the setting, exit 1 (like every other setting).
  assert.is(code, 1);
  const lines = out
    .trim()
    .split('\n')
    .filter((l) => !l.startsWith('npm warn'));
  assert.is(lines.length, 1, out);
  const line = JSON.parse(lines[0]!) as { setting?: string; msg?: string };
  assert.is(line.setting, 'SITE_TOKEN');
  assert.match(line.msg ?? '', /SITE_TOKEN or SITE_TOKEN_FILE/);
});

test.run();
