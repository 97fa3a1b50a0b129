/**
 * A site's acknowledgement (src/fleet/site/ack-post.ts), against local servers on port 0: the
 * request as it goes on the wire (path, version, token, `connection: close`), the status the
 * control plane answered, whether the control plane closes the connection after its answer or
 * not, and a refused connection or an answer that is not HTTP.
 */
import { createServer as createHttpServer, type IncomingMessage } from 'node:http';
import { createServer as createNetServer, type AddressInfo, type Server } from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { postAck } from '../../src/fleet/site/ack-post.js';

const servers: Server[] = [];
test.after(async () => {
  for (const s of servers) await new Promise((r) => s.close(r));
});

async function listen<S extends Server>(server: S): Promise<URL> {
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/fleet/sites/s%201/ack`);
}

test('POSTs ?version= with the token and connection: close; resolves with the status once the control plane closed', async () => {
  const seen: IncomingMessage[] = [];
  const url = await listen(
    createHttpServer((req, res) => {
      seen.push(req);
      req.resume();
      const ok = req.headers.authorization === 'Bearer tok';
      res.writeHead(ok ? 204 : 401, ok ? {} : { 'content-type': 'application/json' });
      res.end(ok ? undefined : '{"errors": []}');
    }),
  );
  assert.is(await postAck({ url, token: 'tok' }, '1700000000000-3'), 204);
  assert.is(seen[0]!.method, 'POST');
  assert.is(seen[0]!.url, '/v1/fleet/sites/s%201/ack?version=1700000000000-3');
  assert.is(seen[0]!.headers.connection, 'close');
  assert.is(seen[0]!.headers['content-length'], '0');
  assert.is(seen[0]!.headers.host, url.host);
  assert.is(await postAck({ url, token: 'other' }, '1-0'), 401, 'a refusal and its body');
});

test('a server that keeps the connection open after its answer: the site closes it itself', async () => {
  // A bare server that answers and never closes (the site waits for a close a little, then ends it).
  const url = await listen(
    createNetServer((socket) => {
      socket.once('data', () => socket.write('HTTP/1.1 204 No Content\r\n\r\n'));
      socket.on('error', () => undefined);
    }),
  );
  assert.is(await postAck({ url, token: 'tok' }, '1-0'), 204);
});

test('no answer: a refused connection and a reply that is not HTTP both reject', async () => {
  const junk = await listen(
    createNetServer((socket) => {
      socket.once('data', () => socket.end('SSH-2.0-nope\r\n'));
      socket.on('error', () => undefined);
    }),
  );
  let failed = 0;
  await postAck({ url: junk, token: 'tok' }, '1-0').catch(() => failed++);
  const closed = createNetServer();
  const refused = await listen(closed);
  await new Promise((r) => closed.close(r));
  servers.splice(servers.indexOf(closed), 1);
  await postAck({ url: refused, token: 'tok' }, '1-0').catch(() => failed++);
  assert.is(failed, 2);
});

test.run();
