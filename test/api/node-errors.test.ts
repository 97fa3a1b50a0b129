/**
 * Replies that Node's HTTP parser makes before the app sees a request carry the same error body
 * as every other reply (CONTRACT §5): a request line or headers over the limit → 431, malformed
 * HTTP → 400, each with `error-info` naming it, on the real server (`edgeplane serve`); so do
 * requests no URL can be made of (`OPTIONS *`), which the Hono adapter answers.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServe, type ServeProc } from '../helpers/serve-proc.js';
import { wireErrors } from '../helpers/assert.js';

let server: ServeProc;
let port = 0;

test.before(async () => {
  server = startServe({
    PORT: '0',
    DATA_DIR: mkdtempSync(join(tmpdir(), 'edgeplane-node-errors-')),
    ADMIN_PASSWORD: 'node-errors-test-pw',
  });
  port = await server.listening();
});

test.after(async () => {
  server.kill('SIGTERM');
  await server.exited();
});

/** Sends `raw` on a fresh socket; resolves to all the server wrote before it closed (30 s at most). */
function exchange(raw: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1');
    let received = '';
    const limit = setTimeout(() => {
      s.destroy();
      reject(new Error(`no close within 30 s; received: ${received}`));
    }, 30_000);
    s.on('data', (d: Buffer) => (received += d.toString()));
    s.on('close', () => {
      clearTimeout(limit);
      resolve(received);
    });
    s.on('error', () => undefined); // a reset after the reply: what was received is the answer
    s.write(raw);
  });
}

function parse(reply: string): { status: number; headers: Record<string, string>; body: unknown } {
  const [head = '', body = ''] = reply.split('\r\n\r\n');
  const [statusLine = '', ...lines] = head.split('\r\n');
  const headers: Record<string, string> = {};
  for (const l of lines) {
    const i = l.indexOf(':');
    headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
  }
  return { status: Number(statusLine.split(' ')[1]), headers, body: JSON.parse(body) as unknown };
}

test('a URL over the header limit: 431 with the error body', async () => {
  const reply = parse(await exchange(`GET /v1/config/${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`));
  assert.is(reply.status, 431);
  assert.is(reply.headers['content-type'], 'application/json');
  const [e] = wireErrors(reply.body);
  assert.is(e?.['error-info'], 'headers-too-large');
  assert.match(e?.['error-message'] ?? '', /headers/);
});

test('headers over the limit: 431 with the error body', async () => {
  const reply = parse(await exchange(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(20_000)}\r\n\r\n`));
  assert.is(reply.status, 431);
  assert.is(wireErrors(reply.body)[0]?.['error-info'], 'headers-too-large');
});

test('bad framing (Content-Length and Transfer-Encoding together): 400 with the error body', async () => {
  const reply = parse(
    await exchange(
      'POST /v1/login HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
    ),
  );
  assert.is(reply.status, 400);
  const [e] = wireErrors(reply.body);
  assert.is(e?.['error-info'], 'bad-http');
  assert.type(e?.['error-details']?.parser, 'string');
});

test('a request line that is not HTTP: 400 with the error body', async () => {
  const reply = parse(await exchange('HELLO THERE\r\n\r\n'));
  assert.is(reply.status, 400);
  assert.is(wireErrors(reply.body)[0]?.['error-info'], 'bad-http');
});

// HTTP the parser accepts but no URL can be made of (the adapter's own reply was an empty 400).
for (const [what, line, why] of [
  ['the request target *', 'OPTIONS * HTTP/1.1\r\nHost: x', /request cannot be served/],
  ['a Host header that is no host', 'GET /healthz HTTP/1.1\r\nHost: a b', /host/i],
  ['no Host header', 'GET /healthz HTTP/1.0', /host/i],
  ['a backslash in the path', 'GET /v1\\config HTTP/1.1\r\nHost: x', /backslash/i],
] as const)
  test(`${what}: 400 bad-request-target with the error body`, async () => {
    const reply = parse(await exchange(`${line}\r\nConnection: close\r\n\r\n`));
    assert.is(reply.status, 400);
    assert.is(reply.headers['content-type'], 'application/json');
    const [e] = wireErrors(reply.body);
    assert.is(e?.['error-info'], 'bad-request-target');
    assert.match(e?.['error-message'] ?? '', why);
  });

test('an Expect other than 100-continue: 417 expectation-failed with the error body; nothing written', async () => {
  const reply = parse(
    await exchange(
      'PUT /v1/config/applications/e1 HTTP/1.1\r\nHost: x\r\nExpect: bogus\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}',
    ),
  );
  assert.is(reply.status, 417);
  assert.is(reply.headers['content-type'], 'application/json');
  const [e] = wireErrors(reply.body);
  assert.is(e?.['error-info'], 'expectation-failed');
  assert.match(e?.['error-message'] ?? '', /"bogus"/);
});

test('a client that cuts its request body: no error logged (nothing of ours failed)', async () => {
  // A login (no token needed) whose body stops after 10 of 1000 bytes, then the socket closes.
  await new Promise<void>((resolve) => {
    const s = connect(port, '127.0.0.1', () => {
      s.write(
        'POST /v1/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"usernam',
      );
      setTimeout(() => s.destroy(), 200);
    });
    s.on('close', () => resolve());
    s.on('error', () => undefined);
  });
  // The server has seen the close once it answers the next request.
  await exchange('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
  await new Promise((r) => setTimeout(r, 200));
  const errors = server.lines().filter((l) => l.level === 'error');
  assert.equal(errors, [], 'no error lines');
});

test('the server still answers afterwards', async () => {
  const reply = await exchange('GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
  assert.match(reply, /^HTTP\/1\.1 200/);
});

test.run();
