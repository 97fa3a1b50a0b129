/**
 * `oauth2` (CONTRACT §12): OAuth 2.0 client credentials (RFC 6749 §4.4). The access token is
 * fetched from `token-url` (client id and secret by HTTP Basic, §2.3.1; `scope` and `audience`
 * in the form body), cached until shortly before `expires_in` (10 % of it, at most 30 s, before),
 * fetched again on expiry or after a 401 from the webhook (`invalidate`). Concurrent attempts
 * share one fetch. A failing token endpoint is a failed attempt whose error names it; the
 * client secret and the token never appear in an error.
 */
import type { Agent } from 'undici';
import type { Clock } from '../lib/clock.js';
import { oauthSecretVar, type OAuth2Spec } from '../resources/webhook/extensions.js';
import { badHeaderChar } from '../resources/webhook/header-value.js';

export type TokenResult = { ok: true; token: string } | { ok: false; error: string };

export class TokenSource {
  private cached: { token: string; until: number } | undefined;
  private fetching: Promise<TokenResult> | undefined;
  private readonly origin: string;

  constructor(
    private readonly spec: OAuth2Spec,
    private readonly secrets: ReadonlyMap<string, string>,
    private readonly agent: () => Agent,
    private readonly clock: Clock,
  ) {
    this.origin = new URL(spec.tokenUrl).origin;
  }

  token(): TokenResult | Promise<TokenResult> {
    const c = this.cached;
    if (c && this.clock.now() < c.until) return { ok: true, token: c.token };
    this.fetching ??= this.fetch().finally(() => (this.fetching = undefined));
    return this.fetching;
  }

  /** The webhook answered 401 with this token: the next attempt fetches a new one. */
  invalidate(token: string): void {
    if (this.cached?.token === token) this.cached = undefined;
  }

  private async fetch(): Promise<TokenResult> {
    const fail = (why: string): TokenResult => ({ ok: false, error: `oauth2: token endpoint ${this.origin} ${why}` });
    const secret = this.secrets.get(oauthSecretVar) ?? '';
    const form = new URLSearchParams({ grant_type: 'client_credentials' });
    if (this.spec.scope) form.set('scope', this.spec.scope);
    if (this.spec.audience) form.set('audience', this.spec.audience);
    const basic = Buffer.from(`${encodeURIComponent(this.spec.clientId)}:${encodeURIComponent(secret)}`).toString(
      'base64',
    );
    const url = new URL(this.spec.tokenUrl);
    const started = this.clock.now();
    try {
      const res = await this.agent().request({
        origin: url.origin,
        path: url.pathname + url.search,
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          accept: 'application/json',
          authorization: `Basic ${basic}`,
        },
        body: form.toString(),
      });
      const text = await res.body.text();
      if (res.statusCode < 200 || res.statusCode >= 300) return fail(`answered HTTP ${res.statusCode}`);
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        return fail('answered with a body that is not JSON');
      }
      const o = (body ?? {}) as Record<string, unknown>;
      if (typeof o.access_token !== 'string' || !o.access_token) return fail('answered without access_token');
      // Sent as `Bearer <token>`: one that no header can carry is refused here, never cached.
      if (badHeaderChar(o.access_token) !== undefined || o.access_token.trim() !== o.access_token)
        return fail('answered an access_token that is not a valid header value');
      const expiresIn = typeof o.expires_in === 'number' && o.expires_in > 0 ? o.expires_in * 1000 : 3_600_000;
      this.cached = { token: o.access_token, until: started + expiresIn - Math.min(30_000, expiresIn / 10) };
      return { ok: true, token: o.access_token };
    } catch (err) {
      const code = (err as { code?: unknown }).code;
      return fail(
        `failed: ${typeof code === 'string' ? code + ' ' : ''}${err instanceof Error ? err.message : String(err)}`,
      );
    }
  }
}
