/**
 * `ctl watch` outlives a server restart: when the stream ends or the server cannot be reached,
 * it opens the stream again (the current objects come again), and ends on `event: expired` or
 * after its give-up time without a stream. A real HTTP server on port 0 scripts the streams.
 */
import { createServer, type Server } from 'node:http';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { client } from '../../src/cli/client.js';
import { watch } from '../../src/cli/watch.js';
import type { Verb } from '../../src/cli/verb.js';

function verb(url: string, out: string[], err: string[]): Verb {
  const env = { EDGEPLANE_URL: url, EDGEPLANE_CREDENTIALS: '/nonexistent/credentials.json' };
  return {
    args: ['state/volga/webhooks'],
    flags: {},
    client: client(env),
    env,
    out: (t) => out.push(t),
    err: (t) => err.push(t),
  };
}

test('a stream that ends is opened again; event: expired ends the watch with 1', async () => {
  let opened = 0;
  const server: Server = createServer((_req, res) => {
    opened++;
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    if (opened <= 2) {
      res.write(`event: change\ndata: {"x-path":"/v1/state/volga/webhooks/h","delivered":${opened}}\n\n`);
      res.end('event: synced\ndata: {"count":1}\n\n');
    } else res.end('event: expired\ndata: {"error-message":"The token expired","error-info":"invalid-token"}\n\n');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  const out: string[] = [];
  const err: string[] = [];
  try {
    const code = await watch(verb(`http://127.0.0.1:${port}`, out, err), { retryMs: 20, giveUpMs: 5000 });
    assert.is(code, 1);
    assert.is(opened, 3);
    assert.equal(
      out.map((l) => (JSON.parse(l) as { delivered: number }).delivered),
      [1, 2],
    );
    assert.ok(
      err.some((l) => /opened again/.test(l)),
      err.join(''),
    );
    assert.ok(
      err.some((l) => /opening it again/.test(l)),
      err.join(''),
    );
    assert.match(err.at(-1) ?? '', /The token expired/);
  } finally {
    server.close();
  }
});

test('a server that cannot be reached: tried again until the give-up time, then 1', async () => {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise<void>((r) => server.close(() => r()));
  const out: string[] = [];
  const err: string[] = [];
  const code = await watch(verb(`http://127.0.0.1:${port}`, out, err), { retryMs: 20, giveUpMs: 300 });
  assert.is(code, 1);
  assert.ok(err.filter((l) => /opening it again/.test(l)).length >= 2, err.join(''));
  assert.match(err.at(-1) ?? '', /giving up/);
});

test.run();
