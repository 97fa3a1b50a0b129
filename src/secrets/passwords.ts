/**
 * Password hashing with scrypt (node:crypto, async so a login never blocks the event loop).
 * Stored form: `scrypt$<N>$<r>$<p>$<salt b64url>$<hash b64url>` — the parameters travel with
 * the hash, so they can be raised later without invalidating stored passwords.
 */
import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';

/** N=2^14, r=8: 16 MiB per hash, inside Node's default scrypt memory limit (32 MiB). */
const defaults = { N: 16384, r: 8, p: 1 } as const;
const keyLength = 32;
const saltLength = 16;
/** Longest password accepted: scrypt cost does not grow with length, but memory for the body does. */
export const maxPasswordLength = 1024;

function scryptAsync(password: string, salt: Buffer, opts: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password, salt, keyLength, { ...opts, maxmem: 64 * 1024 * 1024 }, (err, key) =>
      err ? reject(err) : resolve(key),
    );
  });
}

type Parsed = { N: number; r: number; p: number; salt: Buffer; hash: Buffer };

const storedForm = /^scrypt\$(\d{1,7})\$(\d{1,2})\$(\d{1,2})\$([A-Za-z0-9_-]{16,})\$([A-Za-z0-9_-]{43})$/;

function parse(stored: string): Parsed | undefined {
  const m = storedForm.exec(stored);
  if (!m) return undefined;
  const [N, r, p] = [Number(m[1]), Number(m[2]), Number(m[3])];
  // N must be a power of two > 1; bounds keep a tampered hash from exhausting memory.
  if (N < 2 || N > 1 << 20 || (N & (N - 1)) !== 0 || r < 1 || r > 16 || p < 1 || p > 4) return undefined;
  return { N, r, p, salt: Buffer.from(m[4] ?? '', 'base64url'), hash: Buffer.from(m[5] ?? '', 'base64url') };
}

/** True when `stored` is a password hash this module wrote (used to validate user objects). */
export function isPasswordHash(stored: unknown): stored is string {
  return typeof stored === 'string' && parse(stored) !== undefined;
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(saltLength);
  const hash = await scryptAsync(password, salt, defaults);
  return `scrypt$${defaults.N}$${defaults.r}$${defaults.p}$${salt.toString('base64url')}$${hash.toString('base64url')}`;
}

/**
 * Constant-time check of `password` against a stored hash. With no stored hash (unknown
 * user) it still spends one scrypt, so response time does not reveal which users exist.
 */
export async function verifyPassword(password: string, stored: string | undefined): Promise<boolean> {
  const parsed = stored === undefined ? undefined : parse(stored);
  if (!parsed) {
    await scryptAsync(password, dummySalt, defaults);
    return false;
  }
  const hash = await scryptAsync(password, parsed.salt, { N: parsed.N, r: parsed.r, p: parsed.p });
  return hash.length === parsed.hash.length && timingSafeEqual(hash, parsed.hash);
}

const dummySalt = randomBytes(saltLength);

/** A new random password: 24 bytes (192 bits), base64url. */
export function generatePassword(): string {
  return randomBytes(24).toString('base64url');
}
