/**
 * `POST /v1/strongbox/init` as the README writes it, sent by the real `curl` over real HTTP:
 * `curl -X POST` sends no body, no Content-Length and no Content-Type, and a user may add a
 * Content-Type header with still no body. Both create the key (200); the second call 409.
 * A body that is not `{}` is still refused (400 `no-body`).
 */
import { execFileSync } from 'node:child_process';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnApiProc, type ApiProc } from '../helpers/api-proc.js';
import { tempDir } from '../helpers/backends.js';

const t = suite('strongbox init with curl');

function curl(args: string[]): { status: number; body: string } {
  const out = execFileSync('curl', ['-s', '-w', '\n%{http_code}', ...args], { encoding: 'utf8', timeout: 10_000 });
  const at = out.lastIndexOf('\n');
  return { status: Number(out.slice(at + 1)), body: out.slice(0, at) };
}

async function uninitialised(): Promise<{ api: ApiProc; auth: string }> {
  const api = await spawnApiProc({
    DATA_DIR: tempDir(),
    ADMIN_PASSWORD: 'init-curl-password',
    STRONGBOX_AUTO_UNSEAL: 'false',
  });
  const login = curl([
    '-X',
    'POST',
    `${api.url}/v1/login`,
    '-H',
    'content-type: application/json',
    '-d',
    '{"username":"admin","password":"init-curl-password"}',
  ]);
  assert.is(login.status, 200, login.body);
  return { api, auth: `Authorization: Bearer ${(JSON.parse(login.body) as { token: string }).token}` };
}

for (const [label, extra] of [
  ['no Content-Type', []],
  ['a Content-Type and no body', ['-H', 'Content-Type: application/json']],
  ['an empty object', ['-H', 'content-type: application/json', '-d', '{}']],
] as const) {
  t(`init with ${label} → 200 and the key, then 409`, async () => {
    const { api, auth } = await uninitialised();
    try {
      const first = curl(['-X', 'POST', `${api.url}/v1/strongbox/init`, '-H', auth, ...extra]);
      assert.is(first.status, 200, first.body);
      const key = (JSON.parse(first.body) as { key: string }).key;
      assert.is(Buffer.from(key, 'base64').length, 32);
      const again = curl(['-X', 'POST', `${api.url}/v1/strongbox/init`, '-H', auth, ...extra]);
      assert.is(again.status, 409, again.body);
    } finally {
      await api.stop();
    }
  });
}

t('init with a body other than {} → 400 no-body, and the store stays uninitialised', async () => {
  const { api, auth } = await uninitialised();
  try {
    const bad = curl([
      '-X',
      'POST',
      `${api.url}/v1/strongbox/init`,
      '-H',
      auth,
      '-H',
      'content-type: application/json',
      '-d',
      '{"key":"x"}',
    ]);
    assert.is(bad.status, 400, bad.body);
    assert.ok(bad.body.includes('"error-info":"no-body"'), bad.body);
    assert.is(curl(['-X', 'POST', `${api.url}/v1/strongbox/init`, '-H', auth]).status, 200);
  } finally {
    await api.stop();
  }
});

t.run();
