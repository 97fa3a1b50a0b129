/**
 * The client address of a request, for throttling and the audit trail: the TCP peer as
 * @hono/node-server's getConnInfo reads it. X-Forwarded-For is not trusted, since every client
 * could set it to dodge the login throttle.
 */
import { getConnInfo } from '@hono/node-server/conninfo';
import type { Context } from 'hono';

export const unknownAddress = 'unknown';

export function clientAddress(c: Context): string {
  // A request that did not come through the Node server (app.request, app.fetch in process)
  // has no socket to read: getConnInfo would throw on its missing bindings.
  const env: unknown = c.env;
  if (typeof env !== 'object' || env === null || !('incoming' in env || 'server' in env)) return unknownAddress;
  return getConnInfo(c).remote.address ?? unknownAddress;
}
