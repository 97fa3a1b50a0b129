/**
 * Options for @hono/node-server's `serve()`. That adapter gives every response without a
 * `content-type` the header `text/plain; charset=UTF-8`, so an empty 201 or 204 (which has no
 * body and so no type) would claim one. Its responses go through `ServerResponse.writeHead`
 * with the header record built by the adapter; this subclass drops exactly that added default
 * when no body follows (no `content-length`: a body the adapter writes at once has one, and a
 * streamed body always carries its own type from the app).
 */
import {
  IncomingMessage,
  STATUS_CODES,
  ServerResponse,
  type Server,
  type OutgoingHttpHeader,
  type OutgoingHttpHeaders,
} from 'node:http';
import { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { ApiError } from '../lib/errors.js';
import { errorText } from '../lib/error-text.js';
import { log } from '../lib/log.js';

const adapterDefault = 'text/plain; charset=UTF-8';

function dropAddedType(headers: OutgoingHttpHeaders): void {
  let type: string | undefined;
  // Lengths first: lower-casing every key of every response cost ~2 % of a GET.
  for (const key in headers) {
    if (key.length === 14 && key.toLowerCase() === 'content-length') return;
    if (key.length === 12 && headers[key] === adapterDefault && key.toLowerCase() === 'content-type') type = key;
  }
  if (type !== undefined) delete headers[type];
}

class ResponseWithoutDefaultType extends ServerResponse {
  constructor(...args: [IncomingMessage, ...unknown[]]) {
    // Node passes the request and options (highWaterMark, rejectNonStandardBodyWrites): all on.
    super(...(args as [IncomingMessage]));
    // The two properties `writeHead` adds later, made here with the values a response reads
    // before it (the prototype's): every property a response gets then comes from the
    // constructor, in one order, and the first instances (warmResponses) hold them all.
    this.statusCode = 200;
    (this as { statusMessage?: string }).statusMessage = undefined;
  }

  override writeHead(
    statusCode: number,
    messageOrHeaders?: string | OutgoingHttpHeaders | OutgoingHttpHeader[],
    headers?: OutgoingHttpHeaders | OutgoingHttpHeader[],
  ): this {
    for (const h of [messageOrHeaders, headers]) if (typeof h === 'object' && !Array.isArray(h)) dropAddedType(h);
    return typeof messageOrHeaders === 'string'
      ? super.writeHead(statusCode, messageOrHeaders, headers)
      : super.writeHead(statusCode, messageOrHeaders);
  }
}

/**
 * Makes the first responses of the process before any request comes: V8 lays out the objects
 * of a class from what its first few instances held (slack tracking), and when those were
 * answers to /healthz polls, the sync streams after them came out as dictionaries, ~3 KiB more
 * a stream (a control plane whose first six responses were /healthz held every site's stream
 * so; one with five did not). These are made as Node makes a request's response, with the
 * properties it adds after the constructor, and dropped.
 */
export function warmResponses(server: Server): void {
  for (let i = 0; i < 8; i++) {
    const req = new IncomingMessage(new Socket());
    req.method = 'GET';
    req.httpVersionMajor = 1;
    req.httpVersionMinor = 1;
    const res = new ResponseWithoutDefaultType(req, { highWaterMark: 16384, rejectNonStandardBodyWrites: false });
    const added = res as unknown as Record<string, unknown>;
    added._keepAliveTimeout = server.keepAliveTimeout;
    added._maxRequestsPerSocket = server.maxRequestsPerSocket;
    added._onPendingData = () => {};
    res.shouldKeepAlive = true;
  }
}

/** Pass as `serve({..., serverOptions})`. */
export const serverOptions = { ServerResponse: ResponseWithoutDefaultType as typeof ServerResponse };

const longRequest = Symbol('edgeplane.long-request');
type Marked = Duplex & { [longRequest]?: true };

/**
 * Exempts the request on `socket` from the server's `requestTimeout` (the slow-client guard,
 * HTTP_REQUEST_TIMEOUT_MS): a body that streams for as long as its response, as a site's sync
 * stream carries the site's acknowledgements for hours (fleet/control/routes.ts). Call it once
 * the request is authenticated; its headers were taken in time.
 */
export function markLongRequest(socket: Duplex): void {
  (socket as Marked)[longRequest] = true;
}

/**
 * Node's HTTP parser answers some requests before any handler sees them: a request line or
 * headers beyond `--max-http-header-size` (431), a request not sent in time (408), a malformed
 * request (bad framing, header syntax: 400). Node's own replies have no body; this listener for
 * the server's `clientError` event answers the same statuses with the error body every other
 * reply has (CONTRACT §5), in JSON (the request's Accept is not known: it was not parsed). As
 * Node does, it writes only on a socket that is writable and has not started a reply, then
 * closes the socket.
 *
 * One exception: a request marked long (markLongRequest) keeps its connection when its body has
 * not ended within `requestTimeout`.
 */
export function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  // Node takes the connection off its time-out list as it emits this: it comes once.
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT' && (socket as Marked)[longRequest]) return;
  const inFlight = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (err.code !== 'ECONNRESET' && socket.writable && !inFlight?.headersSent) {
    const e = clientErrorOf(err.code);
    const body = JSON.stringify(e.toBody());
    socket.write(
      `HTTP/1.1 ${e.status} ${STATUS_CODES[e.status] ?? ''}\r\n` +
        'content-type: application/json\r\n' +
        `content-length: ${Buffer.byteLength(body)}\r\n` +
        'connection: close\r\n\r\n' +
        body,
    );
  }
  socket.destroy();
}

/**
 * @hono/node-server's errorHandler: a request Node parsed but the adapter cannot make a URL of
 * (`OPTIONS *`, a Host header that is no host, a backslash in the path, an absolute URL of
 * another scheme) is a 400 in the error format, naming why (the adapter's own reply is an empty
 * 400); any other error reaching the adapter (the app's own handler catches those it throws) is
 * a 500 in the same format.
 */
export function answerAdapterError(err: unknown): Response {
  const e =
    err instanceof Error && err.name === 'RequestError'
      ? new ApiError(
          'bad-request',
          `The request cannot be served: ${err.message} (no URL can be made of its request target and Host header)`,
          {
            code: 'bad-request-target',
          },
        )
      : new ApiError('internal', 'Internal error: the request was not completed; see the server log');
  if (e.code === 'internal') log('error', 'http: request failed before the app', { error: errorText(err) });
  return Response.json(e.toBody(), { status: e.status });
}

/**
 * Node's `checkExpectation` event: a request whose `Expect` is not `100-continue`. Without a
 * listener Node answers 417 with an empty body; this one answers it in the error format.
 */
export function answerExpectation(req: IncomingMessage, res: ServerResponse): void {
  const expect = String(req.headers.expect ?? '').slice(0, 100);
  const e = new ApiError(
    'expectation-failed',
    `Cannot meet Expect: ${JSON.stringify(expect)}: the only expectation this server meets is 100-continue`,
  );
  const body = JSON.stringify(e.toBody());
  res.writeHead(e.status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

function clientErrorOf(code: string | undefined): ApiError {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return new ApiError(
        'headers-too-large',
        'The request line and headers are larger than this server accepts (Node.js --max-http-header-size, 16 KiB by default): send a shorter URL or fewer headers',
        { code: 'headers-too-large' },
      );
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return new ApiError('payload-too-large', 'The chunk extensions of the request body are too large', {
        code: 'chunk-extensions-too-large',
      });
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new ApiError(
        'request-timeout',
        'The request was not received in time (HTTP_HEADERS_TIMEOUT_MS / HTTP_REQUEST_TIMEOUT_MS)',
        { code: 'request-timeout' },
      );
    default:
      return new ApiError(
        'bad-request',
        `The request is not valid HTTP/1.1${code ? ` (${code})` : ''}: check its request line, headers and body framing`,
        { code: 'bad-http', ...(code ? { parser: code } : {}) },
      );
  }
}
