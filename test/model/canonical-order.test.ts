/**
 * canonicalOrder: sets sorted (keyed entries by key, others by canonical JSON) at any depth,
 * ordered arrays kept; the input is never changed, an object with nothing out of order is
 * returned as it is, and what did not move is shared.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { canonicalOrder } from '../../src/model/canonical-order.js';
import { byName, type OrderedArrays } from '../../src/model/merge.js';
import type { JsonObject } from '../../src/lib/json.js';

const ordered: OrderedArrays = (path) => path.at(-1) === 'headers';

test('sets are sorted at any depth, ordered arrays kept, the input unchanged', () => {
  const input = JSON.parse(
    JSON.stringify({
      name: 'w',
      topics: ['b', 'a', 'c'],
      headers: [{ name: 'z' }, { name: 'a' }],
      variables: [{ name: 'y', v: [3, 1] }, { name: 'x' }, { other: 1 }],
      deep: { list: [{ k: 2 }, { k: 1 }], same: ['a', 'b'] },
      scalar: 1,
      none: null,
    }),
  ) as JsonObject;
  const copy = JSON.parse(JSON.stringify(input)) as JsonObject;
  const out = canonicalOrder(input, ordered, byName);
  assert.equal(input, copy, 'the input is unchanged');
  assert.equal(out, {
    name: 'w',
    topics: ['a', 'b', 'c'],
    headers: [{ name: 'z' }, { name: 'a' }],
    variables: [{ name: 'x' }, { name: 'y', v: [1, 3] }, { other: 1 }],
    deep: { list: [{ k: 1 }, { k: 2 }], same: ['a', 'b'] },
    scalar: 1,
    none: null,
  });
  assert.equal(Object.keys(out), Object.keys(input), 'members keep their order');
  assert.ok(out.headers === input.headers, 'an ordered array with nothing to sort is shared');
  assert.ok((out.deep as JsonObject).same === (input.deep as JsonObject).same, 'a set already in order is shared');
});

test('an object with nothing out of order is returned as it is', () => {
  const input = JSON.parse(
    '{"name":"w","topics":["a","b"],"v":[{"name":"a","x":[1,2]}],"__proto__":{"y":1}}',
  ) as JsonObject;
  assert.ok(canonicalOrder(input, ordered, byName) === input);
});

test('a member named __proto__ stays data in a copy', () => {
  const input = JSON.parse('{"__proto__":{"t":["b","a"]},"z":["b","a"]}') as JsonObject;
  const out = canonicalOrder(input, ordered, byName);
  assert.ok(out !== input);
  assert.ok(Object.prototype.hasOwnProperty.call(out, '__proto__'));
  assert.equal(JSON.stringify(out), '{"__proto__":{"t":["a","b"]},"z":["a","b"]}');
  assert.is(Object.getPrototypeOf(out), Object.prototype);
});

test.run();
