/**
 * The secret store's master key and seal state. Secret values are encrypted
 * with AES-256-GCM (random 96-bit IV; the object key and member name as additional data,
 * so a ciphertext cannot be moved to another secret). A key check value in the store's kv
 * area tells a wrong key from the right one at unseal time.
 */
import { createCipheriv, createDecipheriv, randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ApiError } from '../lib/errors.js';
import { log } from '../lib/log.js';
import { SettingsError, type Settings } from '../lib/settings.js';
import type { Store } from '../store/store.js';
import { open as openSealedWith, type SitePrivateKey } from './sealed.js';
import { errorText } from '../lib/error-text.js';

const PREFIX = 'enc:v1:';
const CHECK_KEY = 'strongbox:check';
const CHECK_TEXT = 'edgeplane-strongbox-key-check';
const INIT_CLAIM_KEY = 'strongbox:init-claim';

/** True when `check` (the stored check value) was made with `key`. */
function checks(key: Buffer, check: string): boolean {
  let plain: string | undefined;
  try {
    plain = decryptWith(key, check, CHECK_KEY);
  } catch {
    return false;
  }
  return plain.length === CHECK_TEXT.length && timingSafeEqual(Buffer.from(plain), Buffer.from(CHECK_TEXT));
}

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

/** The additional data of a value sealed for `site`: the site, the object and the member. */
export function sealedContext(site: string, storeKey: string, member: string): string {
  return `edgeplane-fleet:${site}:${storeKey}#${member}`;
}

export class Strongbox {
  private key: Buffer | undefined;
  private siteKey: { site: string; key: SitePrivateKey } | undefined;
  private readonly unsealListeners = new Set<() => Promise<void> | void>();

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
      try {
        b64 = readFileSync(settings.strongboxKeyFile, 'utf8');
      } catch (err) {
        const why = errorText(err);
        throw new SettingsError('STRONGBOX_KEY_FILE', `cannot read the key file: ${why}`);
      }
      source = 'STRONGBOX_KEY_FILE';
    } else if (settings.strongboxAutoUnseal) {
      const file = join(settings.dataDir, 'strongbox.key');
      source = file;
      if (existsSync(file)) b64 = readFileSync(file, 'utf8');
      else if (await this.initialised()) {
        // The store (a Redis shared with other processes) is sealed with a key this process
        // does not have: a key of its own would only keep it sealed, and hide what to do.
        log('error', 'strongbox: sealed: the store was sealed with a key this process does not have', {
          file,
          fix: "give this process the first one's key (STRONGBOX_KEY, or STRONGBOX_KEY_FILE naming its DATA_DIR/strongbox.key), or POST /v1/strongbox/unseal",
        });
        return;
      } else {
        mkdirSync(settings.dataDir, { recursive: true });
        b64 = randomBytes(32).toString('base64');
        writeFileSync(file, b64 + '\n', { mode: 0o600 });
        log('info', 'strongbox: wrote a new master key', { file });
      }
    }
    if (b64 === undefined) {
      if (await this.initialised())
        log('warn', 'strongbox: sealed (no master key configured); POST /v1/strongbox/unseal to unseal');
      else log('warn', 'strongbox: not initialised (no master key yet); POST /v1/strongbox/init creates it');
      return;
    }
    try {
      await this.unseal(b64, source, { initialise: true });
    } catch (err) {
      log('error', 'strongbox: stays sealed', { reason: errorText(err) });
    }
  }

  /**
   * Unseals with a base64 key; a key that does not match the stored check value is refused
   * (400). On a store without a check value (uninitialised) only a key from the settings
   * (`initialise`, used at start) becomes the key: an unseal request never chooses it.
   */
  async unseal(b64: string, source = 'key', opts: { initialise?: boolean } = {}): Promise<void> {
    const key = decodeKey(b64, source);
    const check = await this.store.kvGet(CHECK_KEY);
    if (check === undefined) {
      if (!opts.initialise)
        throw new ApiError(
          'invalid-value',
          'Cannot unseal: the secret store is not initialised; POST /v1/strongbox/init creates its master key',
          { code: 'not-initialised', path: source },
        );
      await this.store.kvSet(CHECK_KEY, encryptWith(key, CHECK_TEXT, CHECK_KEY));
    } else if (!checks(key, check)) {
      throw new ApiError(
        'invalid-value',
        `Cannot unseal with the key from ${source}: it is not the key this store was sealed with`,
        { code: 'wrong-key', path: source },
      );
    }
    this.key = key;
    log('info', 'strongbox: unsealed');
    await Promise.all([...this.unsealListeners].map((fn) => fn()));
  }

  /** Runs `fn` after each unseal, before the unseal resolves (an edge site then loads its key pair). */
  onUnseal(fn: () => Promise<void> | void): () => void {
    this.unsealListeners.add(fn);
    return () => this.unsealListeners.delete(fn);
  }

  /** True when the store has a master key (its check value), whether or not this process holds it. */
  async initialised(): Promise<boolean> {
    return (await this.store.kvGet(CHECK_KEY)) !== undefined;
  }

  /**
   * Creates the master key of an uninitialised store, stores its check value (never the key),
   * unseals, and returns the key in base64: the only time it is ever shown. 409 when the store
   * has a key already. Concurrent calls (several processes on one Redis): one claim wins.
   */
  async init(): Promise<string> {
    const conflict = () =>
      new ApiError('conflict', 'Cannot init: the secret store already has a master key; use unseal', {
        code: 'initialised',
      });
    if (await this.initialised()) throw conflict();
    // The claim expires, so a process dying between claim and write does not block init for good.
    if ((await this.store.kvIncr(INIT_CLAIM_KEY, 1, 10_000)) !== 1 || (await this.initialised())) throw conflict();
    const key = randomBytes(32);
    await this.store.kvSet(CHECK_KEY, encryptWith(key, CHECK_TEXT, CHECK_KEY));
    this.key = key;
    log('info', 'strongbox: initialised with a new master key and unsealed');
    await Promise.all([...this.unsealListeners].map((fn) => fn()));
    return key.toString('base64');
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

  /** At an edge site: the site's private key (kept in the store under this master key). */
  holdSiteKey(site: string, key: SitePrivateKey): void {
    this.siteKey = { site, key };
  }

  /** Opens a member of a secret that the control plane sealed for this site. */
  openSealed(sealed: string, storeKey: string, member: string): string {
    this.requireKey();
    if (!this.siteKey)
      throw new ApiError(
        'sealed',
        `Cannot open ${storeKey}: it is sealed for this edge site, whose key is not loaded yet (unseal the secret store)`,
        { code: 'sealed' },
      );
    try {
      return openSealedWith(this.siteKey.key, sealed, sealedContext(this.siteKey.site, storeKey, member));
    } catch (err) {
      // Not for this site's key (yet: another process of the site presented a new one), or
      // altered: the value cannot be read now; a 503 naming why, never a 500.
      throw new ApiError('sealed', `Cannot open ${storeKey}: ${(err as Error).message}`, { code: 'sealed' });
    }
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
