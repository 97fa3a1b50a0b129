/**
 * The secret store's master key and seal state. Secret values are encrypted
 * with AES-256-GCM (random 96-bit IV; the object key and member name as additional data,
 * so a ciphertext cannot be moved to another secret). A key check value in the store's kv
 * area tells a wrong key from the right one at unseal time.
 */
import { createCipheriv, createDecipheriv, randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ApiError } from '../errors.js';
import { log } from '../log.js';
import type { Settings } from '../settings.js';
import type { Store } from '../store/store.js';

const PREFIX = 'enc:v1:';
const CHECK_KEY = 'strongbox:check';
const CHECK_TEXT = 'edgeplane-strongbox-key-check';

export function isCiphertext(v: string): boolean {
  return v.startsWith(PREFIX);
}

function decodeKey(b64: string, source: string): Buffer {
  const key = Buffer.from(b64.trim(), 'base64');
  if (key.length !== 32)
    throw new ApiError(
      'invalid-value',
      `Cannot use the key from ${source}: it must be 32 bytes in base64 (got ${key.length} bytes)`,
      { code: 'bad-key', path: source },
    );
  return key;
}

export class Strongbox {
  private key: Buffer | undefined;

  constructor(private readonly store: Store) {}

  get sealed(): boolean {
    return this.key === undefined;
  }

  /** Loads the key from the settings (or the auto key file) and unseals when one is found. */
  async open(settings: Settings): Promise<void> {
    let b64: string | undefined;
    let source = 'STRONGBOX_KEY';
    if (settings.strongboxKey) b64 = settings.strongboxKey;
    else if (settings.strongboxKeyFile) {
      b64 = readFileSync(settings.strongboxKeyFile, 'utf8');
      source = 'STRONGBOX_KEY_FILE';
    } else if (settings.strongboxAutoUnseal) {
      const file = join(settings.dataDir, 'strongbox.key');
      source = file;
      if (existsSync(file)) b64 = readFileSync(file, 'utf8');
      else {
        mkdirSync(settings.dataDir, { recursive: true });
        b64 = randomBytes(32).toString('base64');
        writeFileSync(file, b64 + '\n', { mode: 0o600 });
        log('info', 'strongbox: wrote a new master key', { file });
      }
    }
    if (b64 === undefined) {
      log('warn', 'strongbox: sealed (no master key configured); POST /v1/strongbox/unseal to unseal');
      return;
    }
    try {
      await this.unseal(b64, source);
    } catch (err) {
      log('error', 'strongbox: stays sealed', { reason: err instanceof Error ? err.message : String(err) });
    }
  }

  /** Unseals with a base64 key; a key that does not match the stored check value is refused. */
  async unseal(b64: string, source = 'key'): Promise<void> {
    const key = decodeKey(b64, source);
    const check = await this.store.kvGet(CHECK_KEY);
    if (check === undefined) {
      await this.store.kvSet(CHECK_KEY, encryptWith(key, CHECK_TEXT, CHECK_KEY));
    } else {
      let plain: string | undefined;
      try {
        plain = decryptWith(key, check, CHECK_KEY);
      } catch {
        plain = undefined;
      }
      const ok =
        plain !== undefined &&
        plain.length === CHECK_TEXT.length &&
        timingSafeEqual(Buffer.from(plain), Buffer.from(CHECK_TEXT));
      if (!ok)
        throw new ApiError(
          'invalid-value',
          `Cannot unseal with the key from ${source}: it is not the key this store was sealed with`,
          { code: 'wrong-key', path: source },
        );
    }
    this.key = key;
    log('info', 'strongbox: unsealed');
  }

  private requireKey(): Buffer {
    if (!this.key)
      throw new ApiError('sealed', 'The secret store is sealed: POST /v1/strongbox/unseal with the master key', {
        code: 'sealed',
      });
    return this.key;
  }

  encrypt(plain: string, context: string): string {
    return encryptWith(this.requireKey(), plain, context);
  }

  decrypt(stored: string, context: string): string {
    return decryptWith(this.requireKey(), stored, context);
  }
}

function encryptWith(key: Buffer, plain: string, context: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(context));
  const ct = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return PREFIX + [iv, ct, cipher.getAuthTag()].map((b) => b.toString('base64url')).join('.');
}

function decryptWith(key: Buffer, stored: string, context: string): string {
  if (!stored.startsWith(PREFIX)) throw new Error('not an encrypted value');
  const [iv, ct, tag] = stored
    .slice(PREFIX.length)
    .split('.')
    .map((p) => Buffer.from(p, 'base64url'));
  if (!iv || !ct || !tag) throw new Error('malformed encrypted value');
  const decipher = createDecipheriv('aes-256-gcm', key, iv);
  decipher.setAAD(Buffer.from(context));
  decipher.setAuthTag(tag);
  return Buffer.concat([decipher.update(ct), decipher.final()]).toString('utf8');
}
