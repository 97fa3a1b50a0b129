/**
 * The client address of a request, for throttling and the audit trail: the TCP peer as seen
 * by @hono/node-server. X-Forwarded-For is not trusted, since every client could set it to dodge
 * the login throttle.
 */
import type { Context } from 'hono';

export const unknownAddress = 'unknown';

export function clientAddress(c: Context): string {
  const env: unknown = c.env;
  if (typeof env !== 'object' || env === null || !('incoming' in env)) return unknownAddress;
  const incoming: unknown = env.incoming;
  if (typeof incoming !== 'object' || incoming === null || !('socket' in incoming)) return unknownAddress;
  const socket: unknown = incoming.socket;
  if (typeof socket !== 'object' || socket === null || !('remoteAddress' in socket)) return unknownAddress;
  return typeof socket.remoteAddress === 'string' ? socket.remoteAddress : unknownAddress;
}
