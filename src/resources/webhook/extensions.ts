/**
 * The delivery extensions of CONTRACT §12 as configured, compiled with the rest of the spec:
 * `client-certificate` (mutual TLS from a vault secret), `ordering-key` (order per key,
 * parallel across keys) and `rate-limit` (a token bucket shared by the site's processes).
 * exporter/ makes them live for one run.
 */
import { ApiError } from '../../lib/errors.js';
import { isObject, type JsonObject } from '../../lib/json.js';
import { compileTemplate, type Template } from '../../expand/template.js';
import { parseDuration } from '../../lib/duration.js';
import { batchDefaults } from '../schemas.js';

/** Secret variable names of the client certificate: not valid template names, so no clash. */
export const clientCertVar = 'client-certificate.cert';
export const clientKeyVar = 'client-certificate.key';
export const oauthSecretVar = 'oauth2.client-secret';

export type OAuth2Spec = {
  tokenUrl: string;
  clientId: string;
  clientSecret: SecretRef;
  scope: string | undefined;
  audience: string | undefined;
};

/** A vault value read with the secret variables (spec.ts SecretVar has this shape). */
type SecretRef = { name: string; tenant: string; vault: string; secret: string; key: string };

export type ExtensionsSpec = {
  /** The vault values holding the PEM certificate (chain) and key, read with the secret variables. */
  clientCert: { cert: SecretRef; key: SecretRef } | undefined;
  orderingKey: Template | undefined;
  rateLimit: { perSecond: number; burst: number } | undefined;
  oauth2: OAuth2Spec | undefined;
  /** batch: up to maxMessages messages (or maxBytes of body, or what arrived within maxWaitMs) per POST. */
  batch: BatchSpec | undefined;
};

export type BatchSpec = { maxMessages: number; maxBytes: number; maxWaitMs: number };

function batchOf(b: unknown): BatchSpec | undefined {
  if (b === undefined) return undefined;
  const n = isObject(b) ? b['max-messages'] : undefined;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1 || n > 10_000)
    throw bad('batch/max-messages', 'Cannot use batch: max-messages must be a whole number from 1 to 10000');
  const bytes = isObject(b) && b['max-bytes'] !== undefined ? b['max-bytes'] : batchDefaults['max-bytes'];
  if (typeof bytes !== 'number' || !Number.isInteger(bytes) || bytes < 1 || bytes > 64 * 1024 * 1024)
    throw bad('batch/max-bytes', 'Cannot use batch: max-bytes must be a whole number from 1 to 67108864');
  const wait = isObject(b) && b['max-wait'] !== undefined ? b['max-wait'] : batchDefaults['max-wait'];
  if (typeof wait !== 'string')
    throw bad('batch/max-wait', 'Cannot use batch: max-wait must be a duration such as 200ms');
  return { maxMessages: n, maxBytes: bytes, maxWaitMs: parseDuration(wait, 'batch/max-wait') };
}

function bad(path: string, message: string): ApiError {
  return new ApiError('invalid-value', message, { code: 'invalid-config', path });
}

export function extensionsOf(cfg: JsonObject, tenant: string, isDefined: (name: string) => boolean): ExtensionsSpec {
  const cc = cfg['client-certificate'];
  let clientCert: ExtensionsSpec['clientCert'];
  if (cc !== undefined) {
    const ok =
      isObject(cc) &&
      typeof cc.vault === 'string' &&
      typeof cc.secret === 'string' &&
      typeof cc['cert-key'] === 'string' &&
      typeof cc['key-key'] === 'string';
    if (!ok)
      throw bad('client-certificate', 'Cannot use client-certificate: it needs vault, secret, cert-key and key-key');
    const at = { tenant, vault: cc.vault as string, secret: cc.secret as string };
    clientCert = {
      cert: { name: clientCertVar, ...at, key: cc['cert-key'] as string },
      key: { name: clientKeyVar, ...at, key: cc['key-key'] as string },
    };
  }
  const ok = cfg['ordering-key'];
  if (ok !== undefined && typeof ok !== 'string')
    throw bad('ordering-key', 'Cannot use ordering-key: it must be a template string such as ${MSG_PAYLOAD}');
  const rl = cfg['rate-limit'];
  let rateLimit: ExtensionsSpec['rateLimit'];
  if (rl !== undefined) {
    const perSecond = isObject(rl) ? rl['per-second'] : undefined;
    if (typeof perSecond !== 'number' || !(perSecond > 0))
      throw bad('rate-limit/per-second', 'Cannot use rate-limit: per-second must be a number above 0');
    const burst = isObject(rl) && rl.burst !== undefined ? rl.burst : Math.max(1, Math.ceil(perSecond));
    if (typeof burst !== 'number' || !Number.isInteger(burst) || burst < 1)
      throw bad('rate-limit/burst', 'Cannot use rate-limit: burst must be a whole number of at least 1');
    rateLimit = { perSecond, burst };
  }
  const o = cfg.oauth2;
  let oauth2: OAuth2Spec | undefined;
  if (o !== undefined) {
    const cs = isObject(o) ? o['client-secret'] : undefined;
    const url = isObject(o) && typeof o['token-url'] === 'string' ? URL.parse(o['token-url']) : null;
    if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:'))
      throw bad('oauth2/token-url', 'Cannot use oauth2: token-url must be an absolute http or https URL');
    if (!isObject(o) || typeof o['client-id'] !== 'string' || !o['client-id'])
      throw bad('oauth2/client-id', 'Cannot use oauth2: it needs client-id');
    if (!isObject(cs) || typeof cs.vault !== 'string' || typeof cs.secret !== 'string' || typeof cs.key !== 'string')
      throw bad('oauth2/client-secret', 'Cannot use oauth2: client-secret needs vault, secret and key');
    oauth2 = {
      tokenUrl: url.href,
      clientId: o['client-id'],
      clientSecret: { name: oauthSecretVar, tenant, vault: cs.vault, secret: cs.secret, key: cs.key },
      scope: typeof o.scope === 'string' ? o.scope : undefined,
      audience: typeof o.audience === 'string' ? o.audience : undefined,
    };
  }
  return {
    oauth2,
    batch: batchOf(cfg.batch),
    clientCert,
    orderingKey: typeof ok === 'string' ? compileTemplate(ok, { field: 'ordering-key', isDefined }) : undefined,
    rateLimit,
  };
}
