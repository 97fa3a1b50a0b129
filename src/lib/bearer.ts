/**
 * The token of an `Authorization: Bearer <token>` header, read one way for users, sites and
 * /metrics alike. The scheme name is case-insensitive (RFC 9110 §11.1: `bearer x` is as good as
 * `Bearer x`), one or more spaces follow it, and the token is one word (RFC 6750's b64token has
 * no spaces); whitespace around the whole value is allowed. Anything else (another scheme, no
 * token, two words) is undefined.
 */
export function bearerToken(header: string | undefined): string | undefined {
  return /^\s*bearer +(\S+)\s*$/i.exec(header ?? '')?.[1];
}
