/**
 * EDGEPLANE_CONFIG: a YAML or JSON file in the shape of GET /v1/config applied at start as one
 * transaction, idempotent (a second start with the same file changes nothing: same ETags, same
 * store revision), on both stores; the output of GET /v1/config applies as is; `ctl apply` of
 * the same file (its dry-run and PATCH) changes nothing either; a bad file stops
 * the real program with exit 1 and one error line naming the file and the problem, and
 * nothing of it is applied.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { suite, test } from 'uvu';
import * as assert from 'uvu/assert';
import { applyConfigFile } from '../../src/ops/config-file.js';
import { createInstance, type Instance } from '../../src/main/server.js';
import { loadSettings } from '../../src/lib/settings.js';
import { forEachBackend, tempDir, type Backend } from '../helpers/backends.js';
import { freshRedisDb } from '../helpers/redis.js';

const yamlFile = `
x-path: /v1/config/sites/edge-1
name: edge-1
labels: {zone: north}
---
x-path: /v1/config/applications/thermo
name: thermo
version: "1.2"
---
x-path: /v1/config/strongbox/vaults/hooks
name: hooks
---
x-path: /v1/config/strongbox/vaults/hooks/secrets/sink
name: sink
data: {token: file-secret-value}
---
x-path: /v1/config/volga/webhooks/to-sink
name: to-sink
topics: [readings]
site-placement: {all-sites: true}
url: http://127.0.0.1:9/in
data: \${MSG}
---
x-path: /v1/config/system/users/operator
name: operator
password: operator-password-1
policies: [admin]
`;

async function start(env: Record<string, string>): Promise<Instance> {
  return createInstance(loadSettings({ ADMIN_PASSWORD: 'admin-password-1', LOG_LEVEL: 'error', ...env }), {
    runtime: false,
    announce: () => {},
  });
}

async function login(inst: Instance): Promise<string> {
  const res = await inst.app.request('/v1/login', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'admin', password: 'admin-password-1' }),
  });
  return ((await res.json()) as { token: string }).token;
}

async function getConfig(inst: Instance, query = '?send-etag'): Promise<Array<Record<string, unknown>>> {
  const res = await inst.app.request(`/v1/config${query}`, {
    headers: { authorization: `Bearer ${await login(inst)}` },
  });
  assert.is(res.status, 200);
  return (await res.json()) as Array<Record<string, unknown>>;
}

const etags = (objs: Array<Record<string, unknown>>) =>
  objs.map((o) => `${String(o['x-path'])} ${String(o['x-etag'])}`);

function idempotent(backend: Backend): void {
  const t = suite(`EDGEPLANE_CONFIG applied at start (${backend})`);
  t('one transaction; a second start with the same file changes nothing (same ETags)', async () => {
    const dir = tempDir('edgeplane-config-file-');
    const file = join(dir, 'edgeplane.yaml');
    writeFileSync(file, yamlFile);
    const env: Record<string, string> = { DATA_DIR: dir, EDGEPLANE_CONFIG: file };
    if (backend === 'redis') env.REDIS_URL = await freshRedisDb(14);
    const first = await start(env);
    const applied = await getConfig(first);
    const paths = applied.map((o) => o['x-path']);
    for (const p of [
      '/v1/config/sites/edge-1',
      '/v1/config/applications/thermo',
      '/v1/config/strongbox/vaults/hooks/secrets/sink',
      '/v1/config/volga/webhooks/to-sink',
      '/v1/config/system/users/operator',
    ])
      assert.ok(paths.includes(p), `${p} applied`);
    await first.close(1000);

    const second = await start(env);
    try {
      assert.equal(etags(await getConfig(second)), etags(applied));
      // Applied once more on the running instance: nothing to change.
      assert.equal(await applyConfigFile(file, second.deps), { changed: 0, objects: 6 });
      assert.equal(etags(await getConfig(second)), etags(applied));
      // The file's user can log in with the file's password.
      const res = await second.app.request('/v1/login', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username: 'operator', password: 'operator-password-1' }),
      });
      assert.is(res.status, 200);
    } finally {
      await second.close(1000);
    }
  });
  t.run();
}

forEachBackend(idempotent);

test('a file that deletes an object starts again and again (a delete of an object already gone is passed over)', async () => {
  const dir = tempDir('edgeplane-config-file-');
  const make = join(dir, 'make.yaml');
  const del = join(dir, 'del.yaml');
  writeFileSync(make, 'x-path: /v1/config/sites/zzz\nlabels: {a: b}\n');
  writeFileSync(del, 'x-path: /v1/config/sites/zzz\nx-operation: delete\n');
  await (await start({ DATA_DIR: dir, EDGEPLANE_CONFIG: make })).close(1000);
  for (const round of [1, 2]) {
    const inst = await start({ DATA_DIR: dir, EDGEPLANE_CONFIG: del });
    try {
      const paths = (await getConfig(inst, '')).map((o) => o['x-path']);
      assert.not.ok(paths.includes('/v1/config/sites/zzz'), `start ${round}: deleted`);
      assert.equal(await applyConfigFile(del, inst.deps), { changed: 0, objects: 1 });
    } finally {
      await inst.close(1000);
    }
  }
});

test('the JSON output of GET /v1/config applies as is, changing nothing', async () => {
  const dir = tempDir('edgeplane-config-file-');
  const yaml = join(dir, 'in.yaml');
  writeFileSync(yaml, yamlFile);
  const first = await start({ DATA_DIR: dir, EDGEPLANE_CONFIG: yaml });
  const exported = await getConfig(first, '');
  const before = etags(await getConfig(first));
  await first.close(1000);
  // Secret values show as placeholders in the export: applying them keeps the stored ones.
  assert.match(JSON.stringify(exported), /"\(secret\)"/);
  const json = join(dir, 'export.json');
  writeFileSync(json, JSON.stringify(exported, null, 2));
  const second = await start({ DATA_DIR: dir, EDGEPLANE_CONFIG: json });
  try {
    assert.equal(etags(await getConfig(second)), before);
    assert.equal(await applyConfigFile(json, second.deps), { changed: 0, objects: exported.length });
  } finally {
    await second.close(1000);
  }
});

test('EDGEPLANE_CONFIG and ctl apply of the same file give the same result: the unchanged password keeps its hash', async () => {
  const dir = tempDir('edgeplane-config-file-');
  const file = join(dir, 'edgeplane.yaml');
  writeFileSync(file, yamlFile);
  const inst = await start({ DATA_DIR: dir, EDGEPLANE_CONFIG: file });
  try {
    const before = etags(await getConfig(inst));
    const headers = { authorization: `Bearer ${await login(inst)}`, 'content-type': 'application/yaml' };
    // What `ctl apply -f` sends: the server's dry-run of the file, then the file as a PATCH.
    const dry = await inst.app.request('/v1/config?default-operation=replace&dry-run', {
      method: 'PATCH',
      headers,
      body: yamlFile,
    });
    assert.is(dry.status, 200);
    const impacted = ((await dry.json()) as { 'impacted-resources': Array<{ path: string; fields: unknown[] }> })[
      'impacted-resources'
    ];
    assert.equal(
      impacted.filter((i) => i.fields.length > 0).map((i) => i.path),
      [],
      'ctl apply says every object of the file is unchanged',
    );
    const res = await inst.app.request('/v1/config?default-operation=replace', {
      method: 'PATCH',
      headers,
      body: yamlFile,
    });
    assert.is(res.status, 204);
    assert.equal(etags(await getConfig(inst)), before);
    // And back: the config file applied after it changes nothing either.
    assert.equal(await applyConfigFile(file, inst.deps), { changed: 0, objects: 6 });
    const login2 = await inst.app.request('/v1/login', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'operator', password: 'operator-password-1' }),
    });
    assert.is(login2.status, 200);
  } finally {
    await inst.close(1000);
  }
});

/** Runs the real program (worker.ts) until it exits; its exit code and log lines. */
function runProgram(
  env: Record<string, string>,
): Promise<{ code: number | null; lines: Array<Record<string, unknown>> }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'worker.ts'], {
    env: {
      ...process.env,
      PORT: '0',
      HOST: '127.0.0.1',
      ADMIN_PASSWORD: 'admin-password-1',
      LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  return new Promise((resolve) => {
    child.on('exit', (code) => {
      clearTimeout(timer);
      const lines = out
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      resolve({ code, lines });
    });
  });
}

const bad: Array<[string, string, string, RegExp]> = [
  ['missing.yaml', '', 'a missing file', /cannot read the file/],
  ['syntax.yaml', 'x-path: /v1/config/sites/a\nname: [a\n', 'YAML syntax', /line|YAML|yaml/i],
  ['dupkey.json', '[{"x-path": "/v1/config/sites/a", "name": "a", "name": "b"}]', 'a duplicate JSON key', /duplicate/i],
  [
    'invalid.yaml',
    'x-path: /v1/config/sites/good-one\nname: good-one\n---\nx-path: /v1/config/applications/bad\nname: bad\nversion: 12\nno-such-field: 1\n',
    'an invalid second object',
    /applications\/bad/,
  ],
];

for (const [name, content, what, problem] of bad) {
  test(`a bad file (${what}): exit 1, one error line naming the file and the problem, nothing applied`, async () => {
    const dir = tempDir('edgeplane-config-file-');
    const file = join(dir, name);
    if (content) writeFileSync(file, content);
    const run = await runProgram({ DATA_DIR: dir, EDGEPLANE_CONFIG: file });
    assert.is(run.code, 1, JSON.stringify(run.lines));
    const errors = run.lines.filter((l) => l.level === 'error');
    assert.is(errors.length, 1, JSON.stringify(run.lines));
    const line = JSON.stringify(errors[0]);
    assert.ok(line.includes(file), line);
    // The setting at fault is EDGEPLANE_CONFIG (it once said DATA_DIR).
    assert.is(errors[0]?.setting, 'EDGEPLANE_CONFIG', line);
    assert.match(String(errors[0]?.msg), /^edgeplane cannot start \(EDGEPLANE_CONFIG\): EDGEPLANE_CONFIG /);
    assert.match(line, problem);
    assert.not.ok(
      run.lines.some((l) => /listening/.test(String(l.msg))),
      'never served',
    );
    // Checked before the admin user is made: a first start that fails leaves no account whose
    // generated password only that start would have printed.
    const aof = join(dir, 'store.aof');
    assert.not.ok(existsSync(aof) && readFileSync(aof, 'utf8').includes('system/users/admin'), 'no admin user written');
    const after = await start({ DATA_DIR: dir });
    try {
      const paths = (await getConfig(after)).map((o) => String(o['x-path']));
      assert.not.ok(
        paths.some((p) => p.includes('/sites/')),
        paths.join(' '),
      );
    } finally {
      await after.close(1000);
    }
  });
}

test.run();
