/**
 * Slow or stalled clients cannot hold the API's sockets: with the request time-outs set low
 * (HTTP_HEADERS_TIMEOUT_MS, HTTP_REQUEST_TIMEOUT_MS, HTTP_KEEPALIVE_TIMEOUT_MS), the real
 * server closes a raw socket that sends its headers byte by byte, one that stalls mid-body,
 * and an idle keep-alive connection. Each client gives up on its own after 30 s at most.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServe, type ServeProc } from '../helpers/serve-proc.js';

let server: ServeProc;
let port = 0;

test.before(async () => {
  server = startServe({
    PORT: '0',
    DATA_DIR: mkdtempSync(join(tmpdir(), 'edgeplane-timeouts-')),
    ADMIN_PASSWORD: 'timeouts-test-pw',
    HTTP_HEADERS_TIMEOUT_MS: '1000',
    HTTP_REQUEST_TIMEOUT_MS: '2000',
    HTTP_KEEPALIVE_TIMEOUT_MS: '1000',
  });
  port = await server.listening();
});

test.after(async () => {
  server.kill('SIGTERM');
  await server.exited();
});

type Outcome = { closedByServer: boolean; received: string; sent: number };

/**
 * Opens a raw socket, then calls `feed(socket, i)` every `everyMs` (i = 0, 1, ...) until the
 * server closes it or `maxMs` passes (then the client closes it: closedByServer false).
 */
function rawClient(feed: (s: Socket, i: number) => void, everyMs: number, maxMs = 30_000): Promise<Outcome> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    let received = '';
    let sent = 0;
    let done = false;
    const finish = (closedByServer: boolean) => {
      if (done) return;
      done = true;
      clearInterval(timer);
      clearTimeout(limit);
      s.destroy();
      resolve({ closedByServer, received, sent });
    };
    const timer = setInterval(() => {
      if (s.writable) feed(s, sent++);
    }, everyMs);
    const limit = setTimeout(() => finish(false), maxMs);
    s.on('data', (d: Buffer) => (received += d.toString()));
    s.on('end', () => finish(true));
    s.on('close', () => finish(true));
    s.on('error', () => finish(true));
  });
}

test('headers sent byte by byte: the server answers 408 and closes', async () => {
  const head = `GET /v1/config HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ${'a'.repeat(2000)}\r\n\r\n`;
  const r = await rawClient((s, i) => {
    if (i < head.length) s.write(head[i] as string);
  }, 20);
  assert.ok(r.closedByServer, 'the server closed the socket');
  assert.ok(r.sent < head.length, `closed before the headers were complete (${r.sent} of ${head.length} bytes)`);
  assert.match(r.received, /^HTTP\/1\.1 408/);
  assert.match(r.received, /"error-info":"request-timeout"/); // the error body, not Node's empty reply
});

test('a body that stalls half way: the server closes the socket', async () => {
  const head = `POST /v1/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"username":`;
  const r = await rawClient((s, i) => {
    if (i === 0) s.write(head); // then nothing more: 88 bytes of body never come
  }, 50);
  assert.ok(r.closedByServer, 'the server closed the socket');
  assert.not.match(r.received, /^HTTP\/1\.1 200/);
});

test('an idle keep-alive connection is closed', async () => {
  const r = await rawClient((s, i) => {
    if (i === 0) s.write('GET /v1/config HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n');
  }, 50);
  assert.ok(r.closedByServer, 'the server closed the idle socket');
  assert.match(r.received, /^HTTP\/1\.1 401/); // answered first (no token), then closed while idle
});

test('a bad time-out setting is one start-up error line', async () => {
  const p = startServe({
    PORT: '0',
    DATA_DIR: mkdtempSync(join(tmpdir(), 'edgeplane-timeouts-bad-')),
    HTTP_HEADERS_TIMEOUT_MS: '5000',
    HTTP_REQUEST_TIMEOUT_MS: '1000',
  });
  assert.is(await p.exited(), 1);
  assert.is(p.lines()[0]?.setting, 'HTTP_REQUEST_TIMEOUT_MS');
});

test.run();
