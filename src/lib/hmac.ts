/**
 * HMAC-SHA256 of short texts without a native object per call (webhook signing: one HMAC per
 * POST). Node 20's only synchronous HMAC is `createHmac`, which makes a native Hmac object each
 * call (its creation and collection cost more than hashing ~100 bytes); here the key's inner and
 * outer states are computed once and each text is hashed in JavaScript into reused buffers
 * (RFC 2104 over FIPS 180-4 SHA-256). Texts of more than `jsMaxBytes` go to `createHmac`, which
 * is faster for long inputs (a batch's body). The test compares both with `createHmac`.
 */
import { createHash, createHmac, type KeyObject } from 'node:crypto';

// prettier-ignore
const K = new Int32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);

// prettier-ignore
const initial = new Int32Array([
  0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
]);

/** The message schedule, reused by every block. */
const W = new Int32Array(64);

/** The eight words of a state as its 32 bytes, big-endian, at the start of `into`. */
function bigEndian(st: Int32Array, into: Uint8Array): void {
  for (let i = 0; i < 8; i++) {
    const v = st[i]!;
    into[i * 4] = v >>> 24;
    into[i * 4 + 1] = v >>> 16;
    into[i * 4 + 2] = v >>> 8;
    into[i * 4 + 3] = v;
  }
}

/** One 64-byte block of `b` at `off` into the state `st`. */
function block(st: Int32Array, b: Uint8Array, off: number): void {
  for (let i = 0; i < 16; i++) {
    const j = off + i * 4;
    W[i] = (b[j]! << 24) | (b[j + 1]! << 16) | (b[j + 2]! << 8) | b[j + 3]!;
  }
  for (let i = 16; i < 64; i++) {
    const x = W[i - 15]!;
    const y = W[i - 2]!;
    const s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3);
    const s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10);
    W[i] = (W[i - 16]! + s0 + W[i - 7]! + s1) | 0;
  }
  let a = st[0]!;
  let b1 = st[1]!;
  let c = st[2]!;
  let d = st[3]!;
  let e = st[4]!;
  let f = st[5]!;
  let g = st[6]!;
  let h = st[7]!;
  for (let i = 0; i < 64; i++) {
    const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
    const t1 = (h + S1 + ((e & f) ^ (~e & g)) + K[i]! + W[i]!) | 0;
    const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
    const t2 = (S0 + ((a & b1) ^ (a & c) ^ (b1 & c))) | 0;
    h = g;
    g = f;
    f = e;
    e = (d + t1) | 0;
    d = c;
    c = b1;
    b1 = a;
    a = (t1 + t2) | 0;
  }
  st[0] = (st[0]! + a) | 0;
  st[1] = (st[1]! + b1) | 0;
  st[2] = (st[2]! + c) | 0;
  st[3] = (st[3]! + d) | 0;
  st[4] = (st[4]! + e) | 0;
  st[5] = (st[5]! + f) | 0;
  st[6] = (st[6]! + g) | 0;
  st[7] = (st[7]! + h) | 0;
}

/**
 * Writes `text` in UTF-8 into `buf` at `at`; returns where it ends. ASCII byte by byte (a
 * native write per text cost more than the loop for texts this short), the rest by Buffer.
 */
function put(buf: Buffer, text: string, at: number): number {
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0x80) return i + at + buf.write(text.slice(i), i + at);
    buf[at + i] = c;
  }
  return at + n;
}

/** Texts up to this many UTF-16 units are hashed here, longer ones by createHmac. */
const jsMaxLength = 1024;

export class HmacSha256 {
  private readonly inner = initial.slice();
  private readonly outer = initial.slice();
  private readonly state = new Int32Array(8);
  /** The text's bytes and padding: the longest text in UTF-8 (3 bytes a unit) and a block more. */
  private readonly buf = Buffer.alloc(jsMaxLength * 3 + 128);
  /** The outer hash's one block: the inner digest and its padding. */
  private readonly outerBlock = new Uint8Array(64);
  private readonly digest = Buffer.alloc(32);

  /** `keyObject`: the same key for createHmac (long texts). */
  constructor(
    key: Uint8Array,
    private readonly keyObject: KeyObject,
  ) {
    // A key longer than a block is first hashed (RFC 2104).
    const k = key.length > 64 ? createHash('sha256').update(key).digest() : key;
    const pad = new Uint8Array(64);
    for (let i = 0; i < 64; i++) pad[i] = (k[i] ?? 0) ^ 0x36;
    block(this.inner, pad, 0);
    for (let i = 0; i < 64; i++) pad[i] = (k[i] ?? 0) ^ 0x5c;
    block(this.outer, pad, 0);
  }

  /** The base64 HMAC-SHA256 of `a.b.c` (the three texts joined by dots), as createHmac gives it. */
  dotted(a: string, b: string, c: string): string {
    if (a.length + b.length + c.length + 2 > jsMaxLength)
      return createHmac('sha256', this.keyObject).update(`${a}.${b}.${c}`).digest('base64');
    const buf = this.buf;
    let n = put(buf, a, 0);
    buf[n++] = 0x2e;
    n = put(buf, b, n);
    buf[n++] = 0x2e;
    n = put(buf, c, n);
    const st = this.state;
    st.set(this.inner);
    let off = 0;
    for (; off + 64 <= n; off += 64) block(st, buf, off);
    // The last part, 0x80, zeros and the length in bits (the key's block counted) in one or two blocks.
    let r = n - off;
    for (let i = 0; i < r; i++) buf[i] = buf[off + i]!;
    buf[r++] = 0x80;
    if (r > 56) {
      while (r < 64) buf[r++] = 0;
      block(st, buf, 0);
      r = 0;
    }
    while (r < 56) buf[r++] = 0;
    const bits = (64 + n) * 8;
    const hi = Math.floor(bits / 0x100000000);
    const lo = bits >>> 0;
    buf[56] = hi >>> 24;
    buf[57] = hi >>> 16;
    buf[58] = hi >>> 8;
    buf[59] = hi;
    buf[60] = lo >>> 24;
    buf[61] = lo >>> 16;
    buf[62] = lo >>> 8;
    buf[63] = lo;
    block(st, buf, 0);
    const ob = this.outerBlock;
    bigEndian(st, ob);
    // 0x80, zeros, and (64 + 32) × 8 = 768 bits.
    ob[32] = 0x80;
    ob.fill(0, 33, 62);
    ob[62] = 0x03;
    ob[63] = 0x00;
    st.set(this.outer);
    block(st, ob, 0);
    bigEndian(st, this.digest);
    return this.digest.toString('base64');
  }
}
