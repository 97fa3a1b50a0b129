import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { canonicalJson, deepEqual } from '../../src/lib/json.js';
import { etagOf } from '../../src/store/etag.js';

test('canonicalJson sorts keys at every depth', () => {
  assert.is(
    canonicalJson({ b: 1, a: { d: [1, { z: 1, y: 2 }], c: null } }),
    '{"a":{"c":null,"d":[1,{"y":2,"z":1}]},"b":1}',
  );
});

test('etag is strong, quoted and changes exactly with content', () => {
  const a = etagOf({ x: 1, y: 'a' });
  assert.match(a, /^"[A-Za-z0-9_-]+"$/);
  assert.is(a, etagOf({ y: 'a', x: 1 }));
  assert.is.not(a, etagOf({ x: 2, y: 'a' }));
  assert.ok(deepEqual([1, { a: 1 }], [1, { a: 1 }]));
});

test.run();
