/**
 * The binary's command line, driven as child processes: `--version`, `--help`, an unknown
 * argument (exit 2), `serve` starting the service; `ctl` against a real server (Redis, exporter
 * runtime on): login writes a 0600 credentials file, get in yaml/json/table with where and
 * fields, create/replace/merge/delete, apply and diff of a multi-object file, watch, produce,
 * restart, kubectl-like exit codes; `ctl top` under tmux shows the exporter's numbers and
 * quits on q.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { spawnApiProc, type ApiProc } from '../helpers/api-proc.js';
import { ensureCommand } from '../helpers/apt.js';
import { startWebhookServer, type WebhookServer } from '../helpers/webhook-server.js';
import { freshRedisDb } from '../helpers/redis.js';
import { eventually } from '../helpers/wait.js';

const root = resolve(import.meta.dirname, '../..');
const worker = join(root, 'worker.ts');
const dir = mkdtempSync(join(tmpdir(), 'edgeplane-cli-'));
// ctl runs from the esbuild bundle (what ships, and it starts fast); serve and the top-level
// flags are checked on worker.ts under tsx too.
const bundle = join(dir, 'build', 'edgeplane.cjs');
const built = spawnSync(
  process.execPath,
  ['--import', 'tsx', 'scripts/build.ts', '--bundle-only', '--out', join(dir, 'build')],
  {
    cwd: root,
    encoding: 'utf8',
  },
);
if (built.status !== 0) throw new Error(`bundle build failed: ${built.stderr}`);
const creds = join(dir, 'config', 'edgeplane', 'credentials');
let server: ApiProc;
let sink: WebhookServer;

type Run = { code: number | null; stdout: string; stderr: string };

/** Runs `edgeplane ARGS` (the bundle, or worker.ts under tsx) and waits for it to exit. */
function run(args: string[], opts: { env?: Record<string, string>; input?: string; tsx?: boolean } = {}): Promise<Run> {
  const entry = opts.tsx ? ['--import', 'tsx', worker] : [bundle];
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [...entry, ...args], {
      cwd: root,
      env: {
        ...process.env,
        EDGEPLANE_URL: server?.url ?? 'http://127.0.0.1:1',
        EDGEPLANE_CREDENTIALS: creds,
        ...opts.env,
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stdin.end(opts.input ?? '');
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      fail(new Error(`edgeplane ${args.join(' ')} did not exit; stderr: ${stderr}`));
    }, 60_000);
    child.once('exit', (code) => {
      clearTimeout(timer);
      done({ code, stdout, stderr });
    });
  });
}
const ctl = (args: string[], opts?: { env?: Record<string, string>; input?: string }) => run(['ctl', ...args], opts);
const file = (name: string, text: string) => {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
};

test.before(async () => {
  sink = await startWebhookServer();
  server = await spawnApiProc({
    REDIS_URL: await freshRedisDb(3),
    ADMIN_PASSWORD: 'cli-admin-password',
    DATA_DIR: mkdtempSync(join(tmpdir(), 'edgeplane-cli-data-')),
    API_PROC_RUNTIME: '1',
  });
});
test.after(async () => {
  await server.stop();
  await sink.close();
});

test('--version and --help print and exit 0; an unknown argument exits 2 with a message', async () => {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
  for (const tsx of [false, true]) {
    const v = await run(['--version'], { tsx });
    assert.is(v.code, 0);
    assert.is(v.stdout, `edgeplane ${pkg.version}\n`);
    const b = await run(['serve', '--port', '1'], { tsx });
    assert.is(b.code, 2);
    assert.match(b.stderr, /--port/);
  }
  const h = await run(['--help']);
  assert.is(h.code, 0);
  assert.match(h.stdout, /edgeplane ctl <verb>/);
  const bad = await run(['--bogus']);
  assert.is(bad.code, 2);
  assert.match(bad.stderr, /^edgeplane: Unknown option '--bogus'/);
  assert.is(bad.stdout, '');
  const cmd = await run(['frobnicate']);
  assert.is(cmd.code, 2);
  assert.match(cmd.stderr, /unknown command "frobnicate"/);
  const verb = await ctl(['frobnicate']);
  assert.is(verb.code, 2);
  assert.match(verb.stderr, /unknown verb "frobnicate"/);
  const flag = await ctl(['delete', 'sites/x', '-o', 'yaml']);
  assert.is(flag.code, 2);
  assert.match(flag.stderr, /--output does not apply to delete/);
});

test('serve (and no argument) runs the service, under tsx and from the bundle', async () => {
  for (const args of [['--import', 'tsx', worker, 'serve'], [bundle, 'serve'], [bundle]]) {
    const child = spawn(process.execPath, args, {
      cwd: root,
      env: {
        ...process.env,
        PORT: '0',
        HOST: '127.0.0.1',
        DATA_DIR: mkdtempSync(join(tmpdir(), 'edgeplane-cli-serve-')),
        ADMIN_PASSWORD: 'serve-password',
        LOG_LEVEL: 'info',
        REDIS_URL: '',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    try {
      const port = await new Promise<number>((ok, fail) => {
        let buf = '';
        const timer = setTimeout(() => fail(new Error(`not listening: ${buf}`)), 30_000);
        child.stdout.on('data', (d: Buffer) => {
          buf += d.toString();
          const m = /"port":(\d+)/.exec(buf);
          if (m) {
            clearTimeout(timer);
            ok(Number(m[1]));
          }
        });
        child.once('exit', (code) => fail(new Error(`exited ${code}: ${buf}`)));
      });
      const res = await fetch(`http://127.0.0.1:${port}/v1/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username: 'admin', password: 'serve-password' }),
      });
      assert.is(res.status, 200, `edgeplane ${args.join(' ')}`);
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
  }
});

test('without login: 401 with a hint, exit 1; a server that is down: exit 1', async () => {
  const r = await ctl(['get', 'sites']);
  assert.is(r.code, 1);
  assert.match(r.stderr, /401/);
  assert.match(r.stderr, /edgeplane ctl login/);
  const down = await ctl(['get', 'sites'], { env: { EDGEPLANE_URL: 'http://127.0.0.1:1' } });
  assert.is(down.code, 1);
  assert.match(down.stderr, /cannot reach edgeplane at http:\/\/127.0.0.1:1/);
  // A credentials file that is not one is said, not silently taken for no login.
  const garbage = file('garbage-credentials', 'garbage\n');
  const ignored = await ctl(['get', 'sites'], { env: { EDGEPLANE_CREDENTIALS: garbage } });
  assert.is(ignored.code, 1);
  assert.match(ignored.stderr, new RegExp(`^edgeplane: ignoring ${garbage}: not a credentials file`, 'm'));
});

test('login: a wrong password fails; the right one writes the token to a 0600 file', async () => {
  const bad = await ctl(['login'], { env: { EDGEPLANE_PASSWORD: 'wrong' } });
  assert.is(bad.code, 1);
  assert.match(bad.stderr, /login: 401/);
  assert.not.match(bad.stderr, /run: edgeplane ctl login/, 'no advice to do what just failed');
  const r = await ctl(['login', '-u', 'admin', '--password-stdin'], { input: 'cli-admin-password\n' });
  assert.is(r.code, 0, r.stderr);
  assert.match(r.stderr, /logged in/);
  assert.is(statSync(creds).mode & 0o777, 0o600);
  const stored = JSON.parse(readFileSync(creds, 'utf8')) as Record<string, { token: string }>;
  assert.ok(stored[server.url]?.token);
  assert.not.match(readFileSync(creds, 'utf8'), /cli-admin-password/);
});

test('create, get (yaml, json, table, where, fields), replace, merge, delete', async () => {
  const site = file('site.yaml', 'name: s1\ntype: edge\nlabels: {zone: a}\n');
  const c = await ctl(['create', 'sites', '-f', site]);
  assert.is(c.code, 0, c.stderr);
  assert.match(c.stderr, /created \/v1\/config\/sites\/s1/);
  const dup = await ctl(['create', 'sites', '-f', site]);
  assert.is(dup.code, 1);
  assert.match(dup.stderr, /409/);
  assert.match(dup.stderr, /\[exists\]/); // the error's code (error-info) beside its message
  const y = await ctl(['get', 'sites/s1']);
  assert.is(y.code, 0);
  assert.equal(parse(y.stdout), { name: 's1', type: 'edge', labels: { zone: 'a' } });
  // path elements separated by spaces, as supctl users type them
  const spaced = await ctl(['get', 'config', 'sites', 's1']);
  assert.is(spaced.code, 0, spaced.stderr);
  assert.is(spaced.stdout, y.stdout);
  const j = await ctl(['get', '/v1/config/sites/s1', '-o', 'json', '--fields', 'name,labels']);
  assert.equal(JSON.parse(j.stdout), { name: 's1', labels: { zone: 'a' } });
  await ctl(['create', 'config/sites', '-f', file('s2.json', '{"name":"s2","type":"edge","labels":{"zone":"b"}}')]);
  const t = await ctl(['get', 'sites', '-o', 'table', '--fields', 'name,type']);
  assert.is(t.code, 0);
  const lines = t.stdout.trim().split('\n');
  assert.match(lines[0] ?? '', /^NAME\s+TYPE$/);
  assert.ok(lines.some((l) => /^s1\s+edge$/.test(l)) && lines.some((l) => /^s2\s+edge$/.test(l)), t.stdout);
  const w = await ctl(['get', 'sites', '-o', 'json', '--where', 'labels/zone = "b"']);
  assert.equal(
    (JSON.parse(w.stdout) as Array<{ name: string }>).map((s) => s.name),
    ['s2'],
  );
  const r = await ctl(['replace', 'sites/s1', '-f', file('s1b.yaml', 'name: s1\ntype: edge\nlabels: {zone: c}\n')]);
  assert.is(r.code, 0, r.stderr);
  const m = await ctl(['merge', 'sites/s1', '-f', file('m.yaml', 'labels: {tier: gold}\n')]);
  assert.is(m.code, 0, m.stderr);
  assert.equal((parse((await ctl(['get', 'sites/s1'])).stdout) as { labels: unknown }).labels, {
    zone: 'c',
    tier: 'gold',
  });
  const bad = await ctl(['merge', 'sites/s1', '-f', file('bad.yaml', 'labels: 3\n')]);
  assert.is(bad.code, 1);
  assert.match(bad.stderr, /400/);
  assert.match(bad.stderr, /\[schema-type at labels\]/); // error-info and error-details' path
  assert.is((await ctl(['delete', 'sites/s2'])).code, 0);
  const gone = await ctl(['get', 'sites/s2']);
  assert.is(gone.code, 1);
  assert.match(gone.stderr, /404/);
  const missingFile = await ctl(['create', 'sites']);
  assert.is(missingFile.code, 2);
});

test('diff -f and apply -f: differences, exit codes, idempotent apply', async () => {
  const desired = file(
    'desired.yaml',
    [
      'x-path: /v1/config/applications/app1',
      'version: "1.0"',
      '---',
      'x-path: /v1/config/sites/s1',
      'type: edge',
      'labels: {zone: c, tier: gold}',
      '',
    ].join('\n'),
  );
  const d1 = await ctl(['diff', '-f', desired]);
  assert.is(d1.code, 1, d1.stderr);
  assert.match(d1.stdout, /~ \/v1\/config\/applications\/app1/);
  assert.match(d1.stdout, /\+ version: 1\.0/);
  assert.not.match(d1.stdout, /sites\/s1/);
  const a1 = await ctl(['apply', '-f', desired]);
  assert.is(a1.code, 0, a1.stderr);
  assert.match(a1.stdout, /\/v1\/config\/applications\/app1 configured/);
  assert.match(a1.stdout, /\/v1\/config\/sites\/s1 unchanged/);
  const d2 = await ctl(['diff', '-f', desired]);
  assert.is(d2.code, 0, d2.stdout);
  assert.is(d2.stdout, '');
  const a2 = await ctl(['apply', '-f', desired]);
  assert.match(a2.stdout, /app1 unchanged/);
  const bad = await ctl(['apply', '-f', file('bad-apply.yaml', 'x-path: /v1/config/nowhere/x\n')]);
  assert.is(bad.code, 1);
  // One unreadable file: the same exit code (2) from diff and apply; diff's 1 means differences only.
  const unreadable = file('unreadable.yaml', 'x-path: [unclosed\n');
  const du = await ctl(['diff', '-f', unreadable]);
  const au = await ctl(['apply', '-f', unreadable]);
  assert.is(du.code, 2, du.stderr);
  assert.is(au.code, 2, au.stderr);
  const refused = await ctl(['diff', '-f', file('bad-diff.yaml', 'x-path: /v1/config/nowhere/x\n')]);
  assert.is(refused.code, 2, 'a refused dry-run is trouble, not differences');
});

test('ctl top | head: the reader goes away, top ends quietly (no EPIPE crash)', async () => {
  const script = `"${process.execPath}" "${bundle}" ctl top | head -c 1 > /dev/null; echo "exit=\${PIPESTATUS[0]}"`;
  const r = spawnSync('bash', ['-c', script], {
    env: { ...process.env, EDGEPLANE_URL: server.url, EDGEPLANE_CREDENTIALS: creds },
    encoding: 'utf8',
    timeout: 60_000,
  });
  assert.match(r.stdout, /exit=0/, r.stderr);
  assert.not.match(r.stderr, /EPIPE|Unhandled|Error/, r.stderr);
});

test('produce, restart and watch of an exporter state', async () => {
  const hook = file(
    'hook.yaml',
    [
      'name: h1',
      'topics: [cli-t]',
      // This site only: placed on s1 too (never connected), the control plane's fleet view would
      // say `starting` (CONTRACT §11).
      'site-placement: {sites: [local]}',
      'start-position: beginning',
      `url: ${sink.url}/h1`,
      'data: ${MSG_PAYLOAD}',
      '',
    ].join('\n'),
  );
  assert.is((await ctl(['create', 'volga/webhooks', '-f', hook])).code, 0);
  const watcher = spawn(
    process.execPath,
    [bundle, 'ctl', 'watch', 'state/volga/webhooks', '--fields', 'name,status,delivered'],
    { cwd: root, env: { ...process.env, EDGEPLANE_URL: server.url, EDGEPLANE_CREDENTIALS: creds } },
  );
  let out = '';
  let err = '';
  watcher.stdout.on('data', (d: Buffer) => (out += d.toString()));
  watcher.stderr.on('data', (d: Buffer) => (err += d.toString()));
  try {
    await eventually(() => /watching for changes/.test(err), `watch synced (${err})`, 30_000);
    const p = await ctl(['produce', 'cli-t', '{"n": 1}']);
    assert.is(p.code, 0, p.stderr);
    await sink.waitFor((reqs) => reqs.some((r) => r.path === '/h1'), 'delivery');
    assert.equal(JSON.parse(sink.requests.find((r) => r.path === '/h1')?.body ?? 'null'), { n: 1 });
    await eventually(() => out.includes('"delivered":1'), `watch shows delivered 1: ${out}`, 30_000);
    const events = out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.ok(events.every((e) => e['x-path'] === '/v1/state/volga/webhooks/h1'));
    assert.equal(Object.keys(events.at(-1) ?? {}).sort(), ['delivered', 'name', 'status', 'x-path']);
  } finally {
    watcher.kill('SIGTERM');
  }
  const r = await ctl(['restart', 'h1']);
  assert.is(r.code, 0, r.stderr);
  assert.is((await ctl(['restart', 'nope'])).code, 1);
  const badPayload = await ctl(['produce', 'cli-t', '{not json']);
  assert.is(badPayload.code, 2);
});

test('--help lists every environment setting the service reads', async () => {
  const h = await run(['--help']);
  const settings = readFileSync(join(root, 'src/lib/settings.ts'), 'utf8');
  const names = new Set([...settings.matchAll(/env(?:\.|, ')([A-Z][A-Z_]{2,})/g)].map((m) => m[1] as string));
  assert.ok(names.size >= 20, [...names].join(' '));
  for (const n of names) assert.ok(h.stdout.includes(n), `--help names ${n}`);
});

test('top under tmux: the exporter with its numbers; q quits', async () => {
  ensureCommand('tmux', 'tmux');
  const socket = `edgeplane-test-${process.pid}`;
  const tmux = (...args: string[]) => spawnSync('tmux', ['-L', socket, ...args], { encoding: 'utf8' });
  const envs = [`EDGEPLANE_URL=${server.url}`, `EDGEPLANE_CREDENTIALS=${creds}`];
  const cmd = `env ${envs.join(' ')} ${process.execPath} ${bundle} ctl top; echo "top exited $?"; sleep 30`;
  const started = tmux('new-session', '-d', '-s', 'top', '-x', '160', '-y', '30', '-c', root, cmd);
  assert.is(started.status, 0, started.stderr);
  try {
    const pane = () => tmux('capture-pane', '-p', '-t', 'top').stdout;
    await eventually(() => /h1\s+ready/.test(pane()), `top shows h1: ${pane()}`, 30_000);
    for (let i = 2; i <= 4; i++) assert.is((await ctl(['produce', 'cli-t', `{"n": ${i}}`])).code, 0);
    await sink.waitFor((reqs) => reqs.filter((r) => r.path === '/h1').length >= 4, 'four deliveries');
    // The row: name, status, delivered, delivered/s, lag, in-flight, failed, dropped.
    const row = await eventually(
      () => {
        const m = /^h1\s+ready\s+(\d+)\s+([\d.]+|-)\s+(\d+|-)\s+(\d+|-)\s+(\d+|-)\s+(\d+|-)/m.exec(pane());
        // The lag is current within a second of the last delivery (CONTRACT §3): wait for it too.
        return m && Number(m[1]) >= 4 && m[3] === '0' ? m : undefined;
      },
      () => `top shows 4 delivered and lag 0: ${pane()}`,
      30_000,
    );
    assert.is(Number(row[1]), 4);
    assert.is(row[3], '0');
    const screen = pane();
    assert.match(screen, /NAME\s+STATUS\s+DELIVERED\s+DELIVERED\/S\s+LAG/);
    assert.match(screen, /edgeplane top/);
    tmux('send-keys', '-t', 'top', 'q');
    await eventually(() => /top exited 0/.test(pane()), `top quits on q: ${pane()}`, 15_000);
  } finally {
    tmux('kill-server');
  }
});

test('top on an unknown site ends with the refusal (exit 1), as get does; it redrew it every second before', async () => {
  const r = await ctl(['top', '--site', 'nope']);
  assert.is(r.code, 1, r.stdout + r.stderr);
  assert.match(r.stderr, /unknown-site/);
});

test('rollout: an action without its object is a usage error (exit 2); a bare name is an exporter', async () => {
  const r = await ctl(['rollout', 'resume']);
  assert.is(r.code, 2, r.stdout + r.stderr);
  assert.match(r.stderr, /give the object/);
  // Not a control plane: the exporter's state is read (no rollout), not /v1/state/<name>.
  const bare = await ctl(['rollout', 'no-such-hook']);
  assert.match(bare.stderr, /volga\/webhooks\/no-such-hook/);
});

test('pause, resume, rewind, attempts, dead-letter and rollback of an exporter', async () => {
  // An exporter of its own (h1 is top's); each verb is one API call.
  const hook = file(
    'hook2.yaml',
    [
      'name: h2',
      'topics: [cli-t2]',
      'site-placement: {sites: [local]}',
      `url: ${sink.url}/h2`,
      'data: ${MSG_PAYLOAD}',
      '',
    ].join('\n'),
  );
  assert.is((await ctl(['create', 'volga/webhooks', '-f', hook])).code, 0);
  assert.is((await ctl(['produce', 'cli-t2', '{"n": 1}'])).code, 0);
  assert.is((await ctl(['pause', 'h2'])).code, 0);
  let cfg = parse((await ctl(['get', 'volga/webhooks/h2'])).stdout) as { enabled?: boolean };
  assert.is(cfg.enabled, false);
  const paused = await ctl(['resume', 'h2']);
  assert.is(paused.code, 0, paused.stderr);
  assert.match(paused.stderr, /resumed/);
  cfg = parse((await ctl(['get', 'volga/webhooks/h2'])).stdout) as { enabled?: boolean };
  assert.is(cfg.enabled, true);
  const rw = await ctl(['rewind', 'h2', 'beginning']);
  assert.is(rw.code, 0, rw.stderr);
  assert.is((await ctl(['rewind', 'h2', 'someday'])).code, 1, 'the API refuses a bad position');
  await eventually(
    async () => {
      const a = await ctl(['attempts', 'h2', '-o', 'json']);
      return a.code === 0 && (JSON.parse(a.stdout) as unknown[]).length >= 1;
    },
    'attempts list the POSTs',
    30_000,
  );
  const table = await ctl(['attempts', 'h2']);
  assert.match(table.stdout, /^TIME\s+TOPIC/m);
  const noDl = await ctl(['dead-letter', 'h2']);
  assert.is(noDl.code, 1);
  assert.match(noDl.stderr, /no dead-letter-topic/);
  assert.is((await ctl(['merge', 'volga/webhooks/h2', '-f', file('dl.yaml', 'dead-letter-topic: h2-dead\n')])).code, 0);
  // Nothing dropped yet: the topic does not exist, which is an empty dead-letter topic, not a failure.
  const empty = await ctl(['dead-letter', 'h2', '-o', 'json']);
  assert.is(empty.code, 0, empty.stderr);
  assert.equal(JSON.parse(empty.stdout), { name: 'h2-dead', length: 0 });
  assert.match(empty.stderr, /nothing dropped yet/);
  await ctl(['produce', 'h2-dead', '{"dead": 1}']);
  const dl = await ctl(['dead-letter', 'h2', '-o', 'json']);
  assert.is(dl.code, 0, dl.stderr);
  assert.is((JSON.parse(dl.stdout) as { name?: string }).name, 'h2-dead');
  // rollback: the merge above undone (dry-run first changes nothing).
  const revs = JSON.parse((await ctl(['get', 'state/config-revisions', '-o', 'json'])).stdout) as Array<{
    revision: number;
  }>;
  const before = String((revs[0]?.revision ?? 0) - 1);
  const dry = await ctl(['rollback', before, '--dry-run', '-o', 'json']);
  assert.is(dry.code, 0, dry.stderr);
  assert.ok(JSON.stringify(JSON.parse(dry.stdout)).includes('/v1/config/volga/webhooks/h2'));
  assert.ok((await ctl(['get', 'volga/webhooks/h2'])).stdout.includes('h2-dead'), 'dry-run changed nothing');
  const rb = await ctl(['rollback', before]);
  assert.is(rb.code, 0, rb.stderr);
  assert.match(rb.stderr, /now revision \d+/);
  assert.not.ok((await ctl(['get', 'volga/webhooks/h2'])).stdout.includes('h2-dead'));
  assert.is((await ctl(['rollback', 'abc'])).code, 2);
  assert.is((await ctl(['rollback', '99999999'])).code, 1);
});

test('yaml output reads back as the objects', async () => {
  const r = await ctl(['get', '/v1/config', '-o', 'yaml']);
  assert.is(r.code, 0);
  const docs = parseAllDocuments(r.stdout).map((d) => d.toJS() as { 'x-path': string });
  assert.ok(docs.some((d) => d['x-path'] === '/v1/config/applications/app1'));
});

test.run();
