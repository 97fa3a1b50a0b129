/**
 * The two sinks of `npm run bench:exporter` (scripts/bench-parties.ts: the Node sink, and the
 * native one built from scripts/sink.c), each in its own process, against a real socket: a
 * content-length body split over several writes, mixed-case header names, a chunked body, two requests in one write (answered both), `batch` bodies counted by the
 * messages they carry (content-length and chunked), the counts read back with `GET /?path=`; a
 * bad content-length answered 400 and the connection closed, the sink still serving the next
 * one. The native sink answers `/arc-*` with 501 (that bench uses the Node sink). And the raw
 * node:net load generator (BENCH_SINK_LOAD=node): at least its n POSTs counted.
 */
import { connect, type Socket } from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { loadSink, startNativeSink, startSink, type Sink } from '../../scripts/bench-parties.js';

let sink: Sink;

/** A raw connection to the sink; `answers(n)` resolves with the text once n answers (status lines) arrived or the socket closed. */
async function open(): Promise<{ sock: Socket; answers(n: number): Promise<string> }> {
  const u = new URL(sink.url);
  const sock = connect(Number(u.port), u.hostname);
  await new Promise<void>((resolve, reject) => sock.once('connect', resolve).once('error', reject));
  let text = '';
  let closed = false;
  const waiters: Array<() => void> = [];
  const wake = () => waiters.splice(0).forEach((w) => w());
  sock.on('data', (d: Buffer) => ((text += d.toString('latin1')), wake()));
  sock.on('close', () => ((closed = true), wake()));
  sock.on('error', () => {});
  const count = () => text.split('HTTP/1.1 ').length - 1;
  return {
    sock,
    async answers(n) {
      for (let i = 0; i < 1000 && count() < n && !closed; i++)
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, 100);
          waiters.push(() => (clearTimeout(t), resolve()));
        });
      return text;
    },
  };
}

const post = (path: string, body: string, headers = 'content-type: application/json\r\n') =>
  `POST ${path} HTTP/1.1\r\nhost: sink\r\n${headers}content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
const chunked = (path: string, parts: string[]) =>
  `POST ${path} HTTP/1.1\r\nhost: sink\r\nTransfer-Encoding: chunked\r\n\r\n` +
  parts.map((p) => `${Buffer.byteLength(p).toString(16)}\r\n${p}\r\n`).join('') +
  '0\r\n\r\n';

async function count(path: string): Promise<number> {
  const r = await fetch(`${sink.url}/?path=${encodeURIComponent(path)}`);
  return ((await r.json()) as { count: number }).count;
}

for (const [name, start] of [
  ['node sink', () => startSink({})],
  ['native sink', startNativeSink],
] as const) {
  const test = suite(name);
  test.before(async () => {
    sink = await start();
  });
  test.after(() => {
    sink.child.kill();
  });

  test('requests by content-length (split over writes, mixed case), chunked, pipelined; batches counted by their messages', async () => {
    const c = await open();
    const first = post('/t', '{"id":"1-0"}');
    // One request in three writes, cut inside the head and inside the body.
    for (const part of [first.slice(0, 20), first.slice(20, first.length - 5), first.slice(first.length - 5)]) {
      c.sock.write(part);
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.match(await c.answers(1), /^HTTP\/1\.1 200 OK\r\n/);
    c.sock.write(
      post('/t', '{"id":"2-0"}', 'Content-Type: application/json\r\nX-Other: 1\r\n').replace(
        'content-length',
        'Content-Length',
      ),
    );
    c.sock.write(chunked('/t', ['{"id":', '"3-0"}']));
    // Two requests in one write: both answered.
    c.sock.write(post('/t', '{"id":"4-0"}') + post('/t', '{"id":"5-0"}'));
    const batch = JSON.stringify([{ id: '6-0' }, { id: '7-0' }, { id: '8-0' }]);
    c.sock.write(post('/batch-t', batch));
    c.sock.write(chunked('/batch-t', ['[{"id":"9-0"},', '{"id":"10-0"}]']));
    const text = await c.answers(7);
    assert.is(text.split('HTTP/1.1 200 OK\r\n').length - 1, 7, text);
    c.sock.destroy();
    assert.is(await count('/t'), 5);
    assert.is(await count('/batch-t'), 5);
    assert.is(await count('/never'), 0);
  });

  test('a bad content-length is answered 400 and the connection closed; the sink serves the next one', async () => {
    const c = await open();
    c.sock.write('POST /bad HTTP/1.1\r\nhost: sink\r\ncontent-length: x\r\n\r\n');
    const text = await c.answers(1);
    assert.match(text, /^HTTP\/1\.1 400 Bad Request\r\n/);
    assert.is(await count('/bad'), 0);
    const d = await open();
    d.sock.write(post('/after-bad', '{}'));
    assert.match(await d.answers(1), /^HTTP\/1\.1 200 OK\r\n/);
    d.sock.destroy();
    c.sock.destroy();
  });

  test('the node:net load generator sends at least its n POSTs, and reports its CPU time', async () => {
    process.env.BENCH_SINK_LOAD = 'node';
    const cpu = await loadSink(`${sink.url}/load`, 4, 200);
    assert.ok(cpu > 0);
    assert.ok((await count('/load')) >= 200);
  });

  if (name === 'native sink')
    test('the native sink answers /arc-* paths 501 and counts nothing there', async () => {
      const c = await open();
      c.sock.write(post('/arc-x', '{}'));
      assert.match(await c.answers(1), /^HTTP\/1\.1 501 /);
      assert.is(await count('/arc-x'), 0);
      c.sock.destroy();
    });

  test.run();
}
