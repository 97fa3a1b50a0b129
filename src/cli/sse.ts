/**
 * Reads a text/event-stream body (the answer of a `?watch` read) as events, with
 * eventsource-parser (the parser of the site's sync loop too): comment lines (keep-alives) are
 * skipped, `data` lines of one event are joined with newlines, and a line end cut between two
 * chunks (a CR at the end of one, its LF at the start of the next) is one line end.
 */
import { createParser, type EventSourceMessage } from 'eventsource-parser';

export type SseEvent = { event: string; data: string };

export async function* readEvents(body: ReadableStream<Uint8Array>): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder();
  let ready: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (e) => ready.push(e) });
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      parser.feed(decoder.decode(value, { stream: true }));
      const events = ready;
      ready = [];
      for (const e of events) yield { event: e.event ?? 'message', data: e.data };
    }
  } finally {
    reader.releaseLock();
  }
}
