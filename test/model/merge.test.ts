import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { JsonObject } from '../../src/lib/json.js';
import { contractOrderedArrays, duplicateKeys, mergePatch } from '../../src/model/merge.js';

const ordered = contractOrderedArrays;
const none = () => false;

// name, target, patch, expected (with the ordered arrays headers and management-ipv4-access-list)
const cases: Array<[string, JsonObject, JsonObject, JsonObject]> = [
  ['scalar replaces', { a: 1, b: 'x' }, { a: 2 }, { a: 2, b: 'x' }],
  ['scalar is created', { a: 1 }, { b: false }, { a: 1, b: false }],
  ['null deletes a member (RFC 7386)', { a: 1, b: 2 }, { a: null }, { b: 2 }],
  ['null on a missing member is a no-op', { a: 1 }, { z: null }, { a: 1 }],
  [
    'objects merge recursively',
    { o: { x: 1, y: { z: 1 } } },
    { o: { y: { w: 2 } } },
    { o: { x: 1, y: { z: 1, w: 2 } } },
  ],
  ['nested null deletes', { o: { x: 1, y: 2 } }, { o: { y: null } }, { o: { x: 1 } }],
  ['nulls in a new object are dropped', {}, { o: { x: null, y: 1 } }, { o: { y: 1 } }],
  ['object replaces scalar', { o: 1 }, { o: { x: 1 } }, { o: { x: 1 } }],
  ['scalar replaces object', { o: { x: 1 } }, { o: 'flat' }, { o: 'flat' }],
  ['array replaces scalar', { t: 'x' }, { t: ['a'] }, { t: ['a'] }],
  ['new array is taken as is', {}, { t: ['a', 'a'] }, { t: ['a', 'a'] }],
  ['scalar arrays merge as sets', { t: ['a', 'b'] }, { t: ['b', 'c', 'c', 1] }, { t: ['a', 'b', 'c', 1] }],
  ['set membership is typed', { t: [1] }, { t: ['1', true] }, { t: [1, '1', true] }],
  ['an empty patch array changes nothing', { t: ['a'] }, { t: [] }, { t: ['a'] }],
  [
    'named objects merge by name, new names appended',
    { hosts: [{ name: 'h1', labels: { a: '1' } }, { name: 'h2' }] },
    { hosts: [{ name: 'h2', cpu: 4 }, { name: 'h1', labels: { b: '2' } }, { name: 'h3' }] },
    { hosts: [{ name: 'h1', labels: { a: '1', b: '2' } }, { name: 'h2', cpu: 4 }, { name: 'h3' }] },
  ],
  [
    'null deletes a member of a named entry',
    { v: [{ name: 'a', x: 1, y: 2 }] },
    { v: [{ name: 'a', x: null }] },
    { v: [{ name: 'a', y: 2 }] },
  ],
  [
    'a name repeated in the patch merges twice',
    { v: [] },
    {
      v: [
        { name: 'a', x: 1 },
        { name: 'a', y: 2 },
      ],
    },
    { v: [{ name: 'a', x: 1, y: 2 }] },
  ],
  [
    'arrays inside named entries merge too',
    { v: [{ name: 'a', t: ['x'] }] },
    { v: [{ name: 'a', t: ['y'] }] },
    { v: [{ name: 'a', t: ['x', 'y'] }] },
  ],
  [
    'unnamed objects are set members by content',
    { v: [{ k: 1, j: 2 }] },
    { v: [{ j: 2, k: 1 }, { k: 3 }] },
    { v: [{ k: 1, j: 2 }, { k: 3 }] },
  ],
  [
    'ordered headers are replaced',
    {
      headers: [
        { name: 'a', value: '1' },
        { name: 'b', value: '2' },
      ],
    },
    { headers: [{ name: 'b', value: '3' }] },
    { headers: [{ name: 'b', value: '3' }] },
  ],
  [
    'ordered access list is replaced',
    { 'management-ipv4-access-list': ['10.0.0.0/8', '1.2.3.0/24'] },
    { 'management-ipv4-access-list': ['1.2.3.0/24'] },
    { 'management-ipv4-access-list': ['1.2.3.0/24'] },
  ],
  [
    'an ordered name deeper down is not ordered',
    { o: { headers: ['a'] } },
    { o: { headers: ['b'] } },
    { o: { headers: ['a', 'b'] } },
  ],
];
for (const [name, target, patch, expected] of cases) {
  test(name, () => {
    const t = structuredClone(target);
    const p = structuredClone(patch);
    assert.equal(mergePatch(target, patch, ordered), expected);
    assert.equal(target, t, 'target untouched');
    assert.equal(patch, p, 'patch untouched');
  });
}

test('the ordered predicate sees member names from the root, without array entries', () => {
  const seen: string[] = [];
  mergePatch(
    { a: { l: [1] }, hosts: [{ name: 'h', tags: ['x'] }] },
    { a: { l: [2] }, hosts: [{ name: 'h', tags: ['y'] }] },
    (path) => {
      seen.push(path.join('/'));
      return false;
    },
  );
  assert.equal(seen.sort(), ['a/l', 'hosts', 'hosts/tags']);
});

test('a predicate decides per path', () => {
  const out = mergePatch({ a: [1], b: [1] }, { a: [2], b: [2] }, (p) => p[0] === 'a');
  assert.equal(out, { a: [2], b: [1, 2] });
  assert.equal(mergePatch({ headers: ['a'] }, { headers: ['b'] }, none), { headers: ['a', 'b'] });
});

test('the result shares nothing with the inputs', () => {
  const target: JsonObject = { keep: { deep: [1] }, list: [{ name: 'a', o: { x: 1 } }] };
  const patch: JsonObject = { add: { n: [1] }, list: [{ name: 'b', o: {} }] };
  const out = mergePatch(target, patch, ordered);
  (out.keep as JsonObject).deep = [];
  ((out.list as JsonObject[])[0] as JsonObject).o = 0;
  (out.add as JsonObject).n = [];
  ((out.list as JsonObject[])[1] as JsonObject).o = 0;
  assert.equal(target, { keep: { deep: [1] }, list: [{ name: 'a', o: { x: 1 } }] });
  assert.equal(patch, { add: { n: [1] }, list: [{ name: 'b', o: {} }] });
});

test('members named like Object.prototype properties are plain data', () => {
  const patch = JSON.parse('{"__proto__": {"x": 1}, "constructor": 1}') as JsonObject;
  const out = mergePatch({ toString: 'a' }, patch, ordered);
  assert.equal(Object.keys(out).sort(), ['__proto__', 'constructor', 'toString']);
  assert.is(Object.getPrototypeOf(out), Object.prototype);
  // uvu's equal reads .constructor, so compare the JSON text here.
  assert.is(JSON.stringify(mergePatch({}, { constructor: { a: 1 } }, ordered)), '{"constructor":{"a":1}}');
});

test("a key other than name merges entries by it (a site's hosts by host-id)", () => {
  const keyOf = (p: readonly string[]) => (p.join('/') === 'hosts' ? 'host-id' : 'name');
  assert.equal(
    mergePatch(
      { hosts: [{ 'host-id': 'h1', labels: { a: '1' } }] },
      { hosts: [{ 'host-id': 'h1', labels: { b: '2' } }, { 'host-id': 'h2' }] },
      ordered,
      keyOf,
    ),
    { hosts: [{ 'host-id': 'h1', labels: { a: '1', b: '2' } }, { 'host-id': 'h2' }] },
  );
});

test('duplicateKeys names both positions, at any depth, and skips ordered lists', () => {
  const keyOf = (p: readonly string[]) => (p.join('/') === 'hosts' ? 'host-id' : 'name');
  assert.equal(
    duplicateKeys(
      {
        hosts: [{ 'host-id': 'a' }, { 'host-id': 'b' }, { 'host-id': 'a' }],
        services: [{ name: 's', env: [{ name: 'X' }, { name: 'X' }] }],
        headers: [{ name: 'h' }, { name: 'h' }],
      },
      ordered,
      keyOf,
    ),
    [
      { key: 'host-id', value: 'a', list: '/hosts', first: '/hosts/0', second: '/hosts/2' },
      { key: 'name', value: 'X', list: '/services/0/env', first: '/services/0/env/0', second: '/services/0/env/1' },
    ],
  );
});

test.run();
