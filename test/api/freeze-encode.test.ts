/** deepFreeze records whole frozen trees; encode keeps the text of those and of nothing else. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { stringify } from 'yaml';
import { encode } from '../../src/api/reply.js';
import { deepFreeze, isDeepFrozen } from '../../src/store/freeze.js';

test('deepFreeze freezes below a shallowly frozen object too, and records the whole tree', () => {
  const inner = { n: 1 };
  const outer = Object.freeze({ inner, list: [{ a: 1 }] });
  assert.not.ok(isDeepFrozen(outer));
  deepFreeze(outer);
  assert.ok(isDeepFrozen(outer) && isDeepFrozen(inner) && isDeepFrozen(outer.list[0]));
  assert.ok(Object.isFrozen(inner) && Object.isFrozen(outer.list) && Object.isFrozen(outer.list[0]));
  assert.not.ok(isDeepFrozen({ n: 1 }));
  assert.not.ok(isDeepFrozen('text'));
});

test('encode: a deep-frozen value gives the same text as a fresh encoding, in JSON and YAML', () => {
  const value = deepFreeze({ name: 'a1', labels: { env: 'prod' }, list: [1, 'two'] });
  for (let i = 0; i < 3; i++) {
    assert.is(encode(value, 'json'), JSON.stringify(value));
    assert.is(encode(value, 'yaml'), stringify(value, { lineWidth: 0 }));
  }
});

test('encode: a value that can change is encoded afresh each time', () => {
  const value: Record<string, unknown> = { name: 'a1' };
  assert.is(encode(value, 'json'), '{"name":"a1"}');
  value.name = 'b2';
  assert.is(encode(value, 'json'), '{"name":"b2"}');
  const shallow = Object.freeze({ inner: { n: 1 } });
  assert.is(encode(shallow, 'json'), '{"inner":{"n":1}}');
  shallow.inner.n = 2;
  assert.is(encode(shallow, 'json'), '{"inner":{"n":2}}');
});

test.run();
