/**
 * A Server-Sent Events response written straight to Node's `ServerResponse` (`c.env.outgoing`
 * of @hono/node-server), for the sync streams (routes.ts): one per connected site, open for
 * hours. hono/streaming's streamSSE puts a TransformStream, its writer, a text encoder and the
 * adapter's pump between each event and the socket, and keeps the request's Context alive as
 * long as the stream: ~29 KiB of heap a stream, most of a site's cost at the control plane.
 * Here an event is one `res.write` of its frame; back-pressure waits for `drain`.
 *
 * Outside Node's server (a request made with `app.request` in a test) the events go into a web
 * ReadableStream instead.
 */
import type { ServerResponse } from 'node:http';
import type { Context } from 'hono';
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response';

export type SseEvent = { event: string; id?: string; data: string };

export type SseSink = {
  /** Writes one event; resolves once it is handed to the socket (after `drain` when its buffer is full). */
  send(e: SseEvent): Promise<void>;
  /** True once the client went away or the stream ended. */
  readonly closed: boolean;
  /** Called once, when the client goes away or the stream ends. */
  onClose(fn: () => void): void;
};

const headers = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' };

function frame(e: SseEvent): string {
  let s = `event: ${e.event}\n`;
  if (e.id !== undefined) s += `id: ${e.id}\n`;
  for (const line of e.data.split('\n')) s += `data: ${line}\n`;
  return s + '\n';
}

/** What both sinks share: closed once, each listener called once. */
function closer(): { closed(): boolean; onClose(fn: () => void): void; close(): void } {
  let listeners: Array<() => void> | undefined = [];
  return {
    closed: () => listeners === undefined,
    onClose(fn) {
      if (listeners) listeners.push(fn);
      else fn();
    },
    close() {
      const l = listeners;
      listeners = undefined;
      for (const fn of l ?? []) fn();
    },
  };
}

/** One object a stream (methods on the prototype, not closures: the control plane holds thousands). */
class NodeSink implements SseSink {
  private listeners: Array<() => void> | undefined = [];
  constructor(private readonly res: ServerResponse) {
    // @hono/node-server's own 'close' listener (it aborts the request's signal, which nothing
    // here reads) keeps the whole request alive as long as the stream, headers and all. Node
    // itself listens to the response's 'finish', not to its 'close'.
    res.removeAllListeners('close');
    res.on('close', () => this.close()); // close() runs its listeners once; `once` would add a wrapper a stream
    // With a request body (a POST sync, whose body carries acknowledgements), the adapter also
    // listens to the response's 'finish' (to drain the body after the response), with the same
    // hold on the request. Node's own 'finish' listener stays.
    for (const f of res.listeners('finish')) if (!f.name.startsWith('bound ')) res.off('finish', f as () => void);
    // The request's headers were read before the stream began; a stream lasts hours.
    res.req.rawHeaders = [];
    res.req.headers = {};
    res.writeHead(200, headers);
    res.flushHeaders();
    // The site may have gone while its request was checked: its 'close' came before ours.
    if (res.destroyed) this.close();
  }
  get closed(): boolean {
    return this.listeners === undefined;
  }
  onClose(fn: () => void): void {
    if (this.listeners) this.listeners.push(fn);
    else fn();
  }
  send(e: SseEvent): Promise<void> {
    const res = this.res;
    if (this.closed || res.write(frame(e))) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = () => {
        res.off('drain', done);
        res.off('close', done);
        resolve();
      };
      res.on('drain', done);
      res.on('close', done);
    });
  }
  close(): void {
    const l = this.listeners;
    this.listeners = undefined;
    for (const fn of l ?? []) fn();
  }
  end(): void {
    if (!this.res.writableEnded) this.res.end();
    // A request body still open (a POST sync): the connection closes once the response is out.
    if (!this.res.req.complete) this.res.req.socket.destroySoon();
    this.close();
  }
}

function webSink(): { sink: SseSink; end(): void; body: ReadableStream<Uint8Array> } {
  const c = closer();
  const encoder = new TextEncoder();
  let ctrl: ReadableStreamDefaultController<Uint8Array> | undefined;
  const body = new ReadableStream<Uint8Array>({
    start: (x) => void (ctrl = x),
    cancel: () => c.close(),
  });
  return {
    body,
    sink: {
      get closed() {
        return c.closed();
      },
      onClose: c.onClose,
      send(e) {
        if (!c.closed()) ctrl?.enqueue(encoder.encode(frame(e)));
        return Promise.resolve();
      },
    },
    end() {
      if (!c.closed()) ctrl?.close();
      c.close();
    },
  };
}

/**
 * Answers `c` with an event stream that `run` writes to; the response ends when `run` settles
 * (an error of `run` ends it too: the client reconnects). `run` must not keep `c`: the stream
 * outlives the request's handling.
 */
export function sseResponse(c: Context, run: (sink: SseSink) => Promise<void>): Response {
  const res = (c.env as { outgoing?: ServerResponse } | undefined)?.outgoing;
  if (res) {
    const sink = new NodeSink(res);
    void run(sink)
      .catch(() => undefined)
      .finally(() => sink.end());
    return RESPONSE_ALREADY_SENT;
  }
  const s = webSink();
  void run(s.sink)
    .catch(() => undefined)
    .finally(() => s.end());
  return new Response(s.body, { status: 200, headers });
}
