/**
 * The one place a failed request becomes its reply: an ApiError is its error body
 * (`{errors: [{error-message, error-info, error-details?}]}`, lib/errors.ts) in the negotiated
 * encoding, as is the bus's `unavailable` (503 `store-unavailable`); anything else is a fault
 * of ours, logged with its stack and answered 500 without internals. The app (main/app.ts),
 * the guard and the inner app of forwarded site reads (site-reads.ts) all answer through it.
 */
import type { Context } from 'hono';
import { BusError } from '../bus/bus.js';
import { ApiError } from '../lib/errors.js';
import { log } from '../lib/log.js';
import { header } from './headers.js';
import { errorResponse, negotiate, type ReplyFormat } from './reply.js';

/** The error encoding: as negotiated, JSON when the Accept header itself is unusable. */
export function errorFormat(accept: string | undefined): ReplyFormat {
  try {
    return negotiate(accept);
  } catch {
    return 'json';
  }
}

export function renderError(err: unknown, c: Context): Response {
  const format = errorFormat(header(c, 'accept'));
  if (err instanceof ApiError) return errorResponse(err, format);
  // Redis, the bus as well as the store, unreachable (a produce not taken in time): 503.
  if (err instanceof BusError && err.code === 'unavailable')
    return errorResponse(
      new ApiError('unavailable', `The Redis message bus is unavailable: ${err.message}`, {
        code: 'store-unavailable',
      }),
      format,
    );
  const e = err instanceof Error ? err : new Error(String(err));
  // The client went away while its body was read: nothing of ours failed, and no one reads the reply.
  if (clientGone(e)) {
    log('debug', 'request aborted by the client', { method: c.req.method, path: c.req.path });
    return errorResponse(
      new ApiError('bad-request', 'The request was aborted by the client before its body ended'),
      format,
    );
  }
  log('error', 'request failed', { method: c.req.method, path: c.req.path, error: e.message, stack: e.stack });
  return errorResponse(
    new ApiError('internal', 'Internal error: the request was not completed; see the server log'),
    format,
  );
}

/**
 * Node's error for a request body cut by its client (`Error: aborted`, code ECONNRESET), also
 * as the cause of a body-read error. Only that one: an ECONNRESET of Redis, say, is ours.
 */
function clientGone(e: Error): boolean {
  for (let x: unknown = e, i = 0; x instanceof Error && i < 4; x = x.cause, i++) {
    const code = (x as { code?: unknown }).code;
    if (x.message === 'aborted' && (code === undefined || code === 'ECONNRESET')) return true;
  }
  return false;
}
