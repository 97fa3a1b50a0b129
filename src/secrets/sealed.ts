/**
 * Values sealed for one edge site: ECIES on X25519 (RFC 7748) with HKDF-SHA-256 (RFC 5869) and
 * AES-256-GCM, all from node:crypto. The site keeps its private key; anyone holding its public
 * key can seal, only the site can open. Each value gets its own ephemeral key pair:
 *
 *   shared = X25519(ephemeral private, site public)
 *   key    = HKDF-SHA-256(shared, salt = ephemeral public ‖ site public, info = 'edgeplane fleet secret v1')
 *   value  = AES-256-GCM(key, random 96-bit IV, additional data = context)
 *
 * The context names the site, the object and the member, so a sealed value cannot be moved to
 * another site or secret. Text form (every part base64url):
 *
 *   sealed:v1:<kid>.<tag>.<ephemeral public>.<iv>.<ciphertext>.<auth tag>
 *
 * `kid` names the site key (a hash of its public key), `tag` is an opaque label the sealer
 * chooses (the control plane puts a hash of its own ciphertext there, so it can tell, without
 * opening anything, whether a sealed value is still current: see `sealedFingerprint`).
 */
import {
  createCipheriv,
  createDecipheriv,
  createHash,
  createPrivateKey,
  createPublicKey,
  diffieHellman,
  hkdfSync,
  randomBytes,
  type KeyObject,
} from 'node:crypto';

const PREFIX = 'sealed:v1:';
const INFO = Buffer.from('edgeplane fleet secret v1');

export type SitePrivateKey = { privateKey: KeyObject; publicKey: string; kid: string };

export function isSealed(v: string): boolean {
  return v.startsWith(PREFIX);
}

/** The key id of a public key (base64url of its 32 raw bytes): 16 characters of its SHA-256. */
export function keyId(publicKey: string): string {
  return createHash('sha256').update(publicKey).digest('base64url').slice(0, 16);
}

/** A public key as sent over the wire: exactly 32 bytes in unpadded base64url. */
export function isPublicKeyText(v: string): boolean {
  return /^[A-Za-z0-9_-]{43}$/.test(v) && Buffer.from(v, 'base64url').length === 32;
}

function publicKeyObject(publicKey: string): KeyObject {
  return createPublicKey({ key: { kty: 'OKP', crv: 'X25519', x: publicKey }, format: 'jwk' });
}

/** PKCS#8 DER of an X25519 private key (RFC 8410), up to its 32 raw bytes. */
const x25519Pkcs8Prefix = Buffer.from('302e020100300506032b656e04220420', 'hex');

/**
 * A new X25519 private key: 32 random bytes (every 32 bytes are one; X25519 clamps them), as
 * PKCS#8 DER. Not generateKeyPairSync: on Node 20 a garbage collection that runs while a key
 * made by it is exported can destroy its key-generation job inside the same lock, and the
 * process hangs for good (seen with thousands of keys: gdb showed ~KeyGenJob waiting on a mutex
 * from a GC inside KeyObjectHandle::ExportJWK).
 */
function newX25519(): { privateKey: KeyObject; der: Buffer } {
  const der = Buffer.concat([x25519Pkcs8Prefix, randomBytes(32)]);
  return { privateKey: createPrivateKey({ key: der, format: 'der', type: 'pkcs8' }), der };
}

/** A new X25519 key pair: the private key as PKCS#8 DER in base64 (to be stored encrypted). */
export function generateSiteKey(): { publicKey: string; privateDer: string } {
  const { privateKey, der } = newX25519();
  return {
    publicKey: String(createPublicKey(privateKey).export({ format: 'jwk' }).x),
    privateDer: der.toString('base64'),
  };
}

export function loadSitePrivateKey(privateDer: string): SitePrivateKey {
  const privateKey = createPrivateKey({ key: Buffer.from(privateDer, 'base64'), format: 'der', type: 'pkcs8' });
  const publicKey = String(createPublicKey(privateKey).export({ format: 'jwk' }).x);
  return { privateKey, publicKey, kid: keyId(publicKey) };
}

function derive(privateKey: KeyObject, publicKey: KeyObject, ephemeral: Buffer, site: Buffer): Buffer {
  const shared = diffieHellman({ privateKey, publicKey });
  return Buffer.from(hkdfSync('sha256', shared, Buffer.concat([ephemeral, site]), INFO, 32));
}

/** Seals `plain` for the site whose public key is `publicKey`; `tag` travels in clear. */
export function seal(publicKey: string, plain: string, context: string, tag: string): string {
  const site = publicKeyObject(publicKey);
  const eph = newX25519().privateKey;
  const ephRaw = Buffer.from(String(createPublicKey(eph).export({ format: 'jwk' }).x), 'base64url');
  const key = derive(eph, site, ephRaw, Buffer.from(publicKey, 'base64url'));
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(context));
  const ct = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  const parts = [ephRaw, iv, ct, cipher.getAuthTag()].map((b) => b.toString('base64url'));
  return PREFIX + [keyId(publicKey), tag, ...parts].join('.');
}

/** `kid.tag` of a sealed value: what it was sealed for and from, without opening it. */
export function sealedFingerprint(sealed: string): string | undefined {
  if (!isSealed(sealed)) return undefined;
  const [kid, tag] = sealed.slice(PREFIX.length).split('.');
  return kid !== undefined && tag !== undefined ? `${kid}.${tag}` : undefined;
}

/** Opens a sealed value; throws (naming no value) when it is not for this key or was altered. */
export function open(key: SitePrivateKey, sealed: string, context: string): string {
  if (!isSealed(sealed)) throw new Error('not a sealed value');
  const [kid, , eph, iv, ct, tag] = sealed.slice(PREFIX.length).split('.');
  if (kid !== key.kid)
    throw new Error(
      `it is sealed for another key of this site (${kid ?? '?'}, this site holds ${key.kid}); ` +
        'the control plane seals it again for the current key once the site has synced',
    );
  if (!eph || iv === undefined || ct === undefined || !tag) throw new Error('malformed sealed value');
  const ephRaw = Buffer.from(eph, 'base64url');
  const ephKey = publicKeyObject(eph);
  const aes = derive(key.privateKey, ephKey, ephRaw, Buffer.from(key.publicKey, 'base64url'));
  const decipher = createDecipheriv('aes-256-gcm', aes, Buffer.from(iv, 'base64url'));
  decipher.setAAD(Buffer.from(context));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  try {
    return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]).toString('utf8');
  } catch {
    throw new Error('a sealed value did not authenticate (altered, or sealed for another site or secret)');
  }
}
