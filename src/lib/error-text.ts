/**
 * The text of a thrown value, for a log line, an exporter's state or an error message: written
 * once. (How an error becomes an HTTP reply is `api/reply.ts`'s business, not this.)
 */

/**
 * An Error's message, with a system or library code in front when the message does not name it
 * (`ECONNREFUSED: ...`; an AggregateError of a refused connection has an empty message); our own
 * codes (lower-case, e.g. an ApiError's) are not repeated. Anything else thrown: String(value).
 */
export function errorText(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const message = err.message || err.name;
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' && /^[A-Z][A-Z0-9_]+$/.test(code) && !message.includes(code)
    ? `${code}: ${message}`
    : message;
}

/** errorText of an error and of its causes, up to 4 deep (undici's `fetch failed` keeps the socket or TLS reason in `cause`). */
export function errorChainText(err: unknown): string {
  const parts: string[] = [];
  for (let e: unknown = err, depth = 0; e !== undefined && depth < 4; depth++) {
    parts.push(errorText(e));
    e = e instanceof Error ? e.cause : undefined;
  }
  return parts.join(': ');
}
