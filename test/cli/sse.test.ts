/**
 * cli/sse.ts reads a text/event-stream body however the network cuts it into chunks: a CRLF
 * split across two chunks is one line end (not a line end and then an empty line, which ended
 * the event early and split it in two), and every way of cutting a stream gives the same events.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readEvents, type SseEvent } from '../../src/cli/sse.js';

function streamOf(chunks: string[]): ReadableStream<Uint8Array> {
  const bytes = chunks.map((c) => new TextEncoder().encode(c));
  return new ReadableStream({
    start(controller) {
      for (const b of bytes) controller.enqueue(b);
      controller.close();
    },
  });
}

async function eventsOf(chunks: string[]): Promise<SseEvent[]> {
  const out: SseEvent[] = [];
  for await (const e of readEvents(streamOf(chunks))) out.push(e);
  return out;
}

test('a CRLF cut between two chunks ends one line: the event stays whole', async () => {
  assert.equal(await eventsOf(['event: change\r\ndata: a\r', '\ndata: b\r\n\r\n']), [
    { event: 'change', data: 'a\nb' },
  ]);
});

const text =
  ': keep-alive\r\n\r\nevent: synced\r\ndata: {"count":2}\r\n\r\ndata: x\r\ndata: y\r\n\r\n' +
  'event: change\rdata: z\r\revent: change\ndata: {"name":"é"}\n\n';
const whole: SseEvent[] = [
  { event: 'synced', data: '{"count":2}' },
  { event: 'message', data: 'x\ny' },
  { event: 'change', data: 'z' },
  { event: 'change', data: '{"name":"é"}' },
];

test('the same events whatever the chunks: whole, and cut at every byte', async () => {
  assert.equal(await eventsOf([text]), whole);
  const bytes = new TextEncoder().encode(text);
  for (let cut = 1; cut < bytes.length; cut++) {
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(bytes.slice(0, cut));
        controller.enqueue(bytes.slice(cut));
        controller.close();
      },
    });
    const out: SseEvent[] = [];
    for await (const e of readEvents(stream)) out.push(e);
    assert.equal(out, whole, `cut at byte ${cut}`);
  }
});

test('an event the stream ends before its blank line is not delivered', async () => {
  assert.equal(await eventsOf(['data: done\n\n', 'data: half']), [{ event: 'message', data: 'done' }]);
});

test.run();
