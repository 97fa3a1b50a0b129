/**
 * `signing: {vault, secret, key}`: Standard Webhooks signatures (https://www.standardwebhooks.com).
 * The vault value is `whsec_<base64 key>`; every POST carries `webhook-id` (the same for every
 * attempt of one message), `webhook-timestamp` (seconds) and
 * `webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">`. The key is never logged
 * and never part of an error text.
 */
import { createSecretKey } from 'node:crypto';
import { HmacSha256 } from '../lib/hmac.js';
import { log } from '../lib/log.js';
import { errorText } from '../lib/error-text.js';

export class Signer {
  /**
   * The HMAC of the key, made once per key: short texts hashed in JavaScript with the key's
   * states computed once (no native Hmac object a POST: lib/hmac.ts), long ones by createHmac
   * with a KeyObject (no copy of the key a call).
   */
  private key: HmacSha256;
  private current: string;
  /** The last timestamp header's second and text: one String() a second, not one a message. */
  private second = -1;
  private ts = '';

  /**
   * `read` gives the vault value now: the exporter's secret map, which a change to the secret
   * store updates in place, so a rotated key signs from the next POST on. Throws an error that
   * describes the problem without the value when the first value is not a whsec_ key.
   */
  constructor(private readonly read: () => string | undefined) {
    const secret = read() ?? '';
    this.key = Signer.keyOf(secret);
    this.current = secret;
  }

  private static keyOf(secret: string): HmacSha256 {
    const m = /^whsec_([A-Za-z0-9+/=_-]+)$/.exec(secret.trim());
    const key = m ? Buffer.from(m[1]!, 'base64') : undefined;
    if (!key || key.length < 16)
      throw new Error('signing: the vault value must be whsec_ followed by a base64 key of at least 16 bytes');
    return new HmacSha256(key, createSecretKey(key));
  }

  /**
   * The request's header list with the three headers added (a new array: `headers` is shared
   * by the messages of an exporter), built in one go rather than concatenated.
   */
  signed(headers: readonly string[], id: string, nowMs: number, body: string): string[] {
    const secret = this.read();
    if (secret !== undefined && secret !== this.current) {
      this.current = secret;
      try {
        this.key = Signer.keyOf(secret);
      } catch (err) {
        // A rotated value that is no whsec_ key: the last good key goes on signing.
        log('warn', 'exporter: the new signing key is not a whsec_ value; the previous key still signs', {
          error: errorText(err),
        });
      }
    }
    const second = Math.floor(nowMs / 1000);
    if (second !== this.second) {
      this.second = second;
      this.ts = String(second);
    }
    const ts = this.ts;
    const sig = this.key.dotted(id, ts, body);
    // One array of its final size (a copy and pushes grew it twice).
    const n = headers.length;
    const out = new Array<string>(n + 6);
    for (let i = 0; i < n; i++) out[i] = headers[i]!;
    out[n] = 'webhook-id';
    out[n + 1] = id;
    out[n + 2] = 'webhook-timestamp';
    out[n + 3] = ts;
    out[n + 4] = 'webhook-signature';
    out[n + 5] = `v1,${sig}`;
    return out;
  }
}

/** A message's id for webhook-id: stable across attempts and unique per topic entry. */
export function webhookId(topic: string, seqno: string): string {
  return `msg_${topic}_${seqno}`;
}

/** A batch's id for webhook-id (`batch`): its topic and first and last entries. */
export function batchId(topic: string, first: string, last: string): string {
  return `batch_${topic}_${first}_${last}`;
}
