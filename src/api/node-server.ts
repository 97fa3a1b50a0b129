/**
 * Options for @hono/node-server's `serve()`. That adapter gives every response without a
 * `content-type` the header `text/plain; charset=UTF-8`, so an empty 201 or 204 (which has no
 * body and so no type) would claim one. Its responses go through `ServerResponse.writeHead`
 * with the header record built by the adapter; this subclass drops exactly that added default
 * when no body follows (no `content-length`: a body the adapter writes at once has one, and a
 * streamed body always carries its own type from the app).
 */
import { ServerResponse, type OutgoingHttpHeader, type OutgoingHttpHeaders } from 'node:http';

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

/** Pass as `serve({..., serverOptions})`. */
export const serverOptions = { ServerResponse: ResponseWithoutDefaultType as typeof ServerResponse };
