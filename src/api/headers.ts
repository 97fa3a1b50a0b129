/**
 * Reading a request header. On @hono/node-server the Node request's plain header object is
 * at hand; reading it there avoids building a WHATWG Headers object for every request
 * (measured: ~5% of a GET). Elsewhere (fetch handler, tests) the standard way is used.
 */
import type { Context } from 'hono';

type NodeBindings = { incoming?: { headers?: Record<string, string | string[] | undefined> } };

export function header(c: Context, name: string): string | undefined {
  const incoming = (c.env as NodeBindings | undefined)?.incoming;
  if (incoming?.headers) {
    const v = incoming.headers[name];
    return Array.isArray(v) ? v.join(', ') : v;
  }
  return c.req.header(name);
}
