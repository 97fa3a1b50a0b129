/**
 * Secrets travel to an edge site sealed for that site (secrets/sealed.ts), end to end.
 *
 * The site makes its own X25519 key pair at first start (`loadSiteKey`, site/site-key.ts) and keeps it in its
 * store's kv area, the private part encrypted under its own secret store's master key; it
 * presents the public key on every sync connection. The control plane records it and its
 * projector seals each member of each vault secret for that key when it writes the site's
 * change log and materialised set (`sealSecretFor`); the site stores what it receives as is
 * and opens a value only in memory, when an exporter reads it. So neither the control plane's
 * change history nor the site's store ever holds a secret value in clear (the control plane's
 * own copy stays encrypted under its master key), and the site's synced configuration is,
 * byte for byte, what the control plane holds for it.
 *
 * A sealed value carries the key id it was sealed for and a hash of the control plane's
 * ciphertext it came from, so the projector compares fingerprints (`sentFingerprint` vs
 * `sourceFingerprint`) instead of values: it seals again only when the secret changed or the
 * site's key did (then every secret of the site is sealed again, in one entry, and the site
 * gets a reset and a snapshot).
 */
import { createHash } from 'node:crypto';
import { isObject, type JsonObject } from '../../lib/json.js';
import { keyId, seal, sealedFingerprint } from '../../secrets/sealed.js';
import { sealedContext, type Strongbox } from '../../secrets/strongbox.js';
import { secret } from '../../resources/secret.js';

/** At the control plane: kv key of the public key a site presented last. */
export const recordedKeyOf = (site: string) => `fleet:site-public-key:${site}`;

export function isSecretKey(key: string): boolean {
  return secret.parseKey(key) !== undefined;
}

const sourceTag = (stored: string) => createHash('sha256').update(stored).digest('base64url').slice(0, 22);

function mapData(value: JsonObject, fn: (member: string, v: string) => string): JsonObject {
  if (!isObject(value.data)) return value;
  const data: JsonObject = {};
  for (const [k, v] of Object.entries(value.data)) data[k] = typeof v === 'string' ? fn(k, v) : v;
  return { ...value, data };
}

/** What a secret as stored at the control plane will look like once sealed for key `kid`. */
export function sourceFingerprint(value: JsonObject, kid: string): JsonObject {
  return mapData(value, (_, v) => `${kid}.${sourceTag(v)}`);
}

/** The same for a secret already sealed (in the materialised set). */
export function sentFingerprint(value: JsonObject): JsonObject {
  return mapData(value, (_, v) => sealedFingerprint(v) ?? v);
}

export function kidOf(publicKey: string): string {
  return keyId(publicKey);
}

/** The control plane's stored secret, each member decrypted in memory and sealed for `site`. */
export function sealSecretFor(
  box: Strongbox,
  site: string,
  publicKey: string,
  storeKey: string,
  stored: JsonObject,
): JsonObject {
  return mapData(stored, (member, v) => {
    const plain = v.startsWith('enc:') ? box.decrypt(v, `${storeKey}#${member}`) : v;
    return seal(publicKey, plain, sealedContext(site, storeKey, member), sourceTag(v));
  });
}
