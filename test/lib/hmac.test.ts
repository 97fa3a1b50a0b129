/**
 * lib/hmac.ts: the HMAC-SHA256 computed in JavaScript is createHmac's, for texts around every
 * block boundary, non-ASCII and lone surrogates, keys shorter and longer than a block, and
 * texts long enough to go to createHmac.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createHmac, createSecretKey } from 'node:crypto';
import { HmacSha256 } from '../../src/lib/hmac.js';

const keys = [
  Buffer.from('0123456789abcdef'),
  Buffer.alloc(64, 7),
  Buffer.from('k'.repeat(65)),
  Buffer.alloc(200, 0xff),
];
const texts: string[] = [''];
for (let n = 1; n < 300; n++) texts.push('x'.repeat(n));
texts.push('é€😀'.repeat(40), '\ud800 lone', 'a\udc00', '{"id":"1-0"}'.repeat(90), 'y'.repeat(5000));

test('the HMAC of a.b.c is createHmac’s', () => {
  for (const key of keys) {
    const h = new HmacSha256(key, createSecretKey(key));
    for (const t of texts)
      for (const [a, b] of [
        ['msg_t_1-0', '1700000000'],
        ['', ''],
        ['é', t.slice(0, 3)],
      ] as const) {
        const want = createHmac('sha256', key).update(`${a}.${b}.${t}`).digest('base64');
        assert.is(h.dotted(a, b, t), want, `key ${key.length} bytes, text ${t.length} units`);
      }
  }
});

test.run();
