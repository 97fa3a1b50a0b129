import { readdirSync, readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ApiError } from '../../src/lib/errors.js';
import { isObject, type Json } from '../../src/lib/json.js';
import { applyJsonPatch } from '../../src/model/jsonpatch.js';
import { parsePointer } from '../../src/lib/json-pointer.js';

function failure(doc: Json, ops: unknown): ApiError {
  try {
    applyJsonPatch(doc, ops);
  } catch (err) {
    assert.instance(err, ApiError);
    return err as ApiError;
  }
  throw new Error('expected the patch to fail');
}

// ---- conformance: the public json-patch-tests suite (test/fixtures/json-patch, see its NOTICE) ----

const dir = new URL('../fixtures/json-patch/', import.meta.url);
const files = readdirSync(dir)
  .filter((f) => f.endsWith('.json'))
  .sort();
let disabled = 0;
let registered = 0;
for (const file of files) {
  const records: unknown = JSON.parse(readFileSync(new URL(file, dir), 'utf8'));
  if (!Array.isArray(records)) throw new Error(`${file} is not an array of records`);
  records.forEach((record: unknown, i) => {
    if (!isObject(record)) throw new Error(`${file}[${i}] is not an object`);
    if (record.disabled === true) {
      disabled++;
      return;
    }
    registered++;
    const name = `${file}[${i}] ${typeof record.comment === 'string' ? record.comment : ''}`;
    const doc = record.doc as Json;
    const usesCopyOrMove =
      Array.isArray(record.patch) && record.patch.some((o) => isObject(o) && (o.op === 'copy' || o.op === 'move'));
    test(`conformance ${name}`, () => {
      const before = structuredClone(doc);
      if (usesCopyOrMove) {
        const err = failure(doc, record.patch);
        assert.is(err.code, 'unsupported-operation');
        assert.is(err.status, 400);
        assert.is(err.info?.code, 'unsupported-op');
      } else if ('expected' in record) {
        assert.equal(applyJsonPatch(doc, record.patch), record.expected);
      } else {
        assert.ok('error' in record, 'a record has expected or error');
        const err = failure(doc, record.patch);
        assert.is(err.code, 'invalid-patch');
        assert.is(err.status, 400);
        assert.type(err.info?.code, 'string');
      }
      assert.equal(doc, before, 'the input document is untouched');
    });
  });
}
console.log(`json-patch conformance: ${registered} records run, ${disabled} disabled records skipped`);
test('conformance suite was found', () => {
  assert.ok(files.length >= 2 && registered > 100, `${registered} records`);
});

// ---- pointers ----

const pointers: Array<[string, string[] | undefined]> = [
  ['', []],
  ['/', ['']],
  ['/a/b', ['a', 'b']],
  ['/a~1b/c~0d', ['a/b', 'c~d']],
  ['/~01', ['~1']],
  ['a', undefined],
  ['/a~2', undefined],
  ['/a~', undefined],
];
for (const [pointer, tokens] of pointers) {
  test(`parsePointer ${JSON.stringify(pointer)}`, () => assert.equal(parsePointer(pointer), tokens));
}

// ---- errors: code, op-index and path (table) ----

const errors: Array<[string, Json, unknown, string, number | undefined, string | undefined]> = [
  // name, doc, ops, info.code, op-index, path
  ['not an array', {}, { op: 'add' }, 'bad-patch', undefined, undefined],
  ['op not an object', {}, [1], 'bad-op', 0, undefined],
  ['unknown op', {}, [{ op: 'spam', path: '/a' }], 'bad-op', 0, undefined],
  ['missing path', {}, [{ op: 'remove' }], 'bad-op', 0, undefined],
  [
    'missing value',
    {},
    [
      { op: 'test', path: '', value: {} },
      { op: 'add', path: '/a' },
    ],
    'bad-op',
    1,
    '/a',
  ],
  ['bad pointer', {}, [{ op: 'add', path: 'a', value: 1 }], 'bad-pointer', 0, 'a'],
  ['bad escape', {}, [{ op: 'add', path: '/a~x', value: 1 }], 'bad-pointer', 0, '/a~x'],
  ['non-JSON value', {}, [{ op: 'add', path: '/a', value: { d: new Date(0) } }], 'bad-value', 0, '/a'],
  ['NaN value', {}, [{ op: 'add', path: '/a', value: Number.NaN }], 'bad-value', 0, '/a'],
  ['leading zero', { a: [1, 2] }, [{ op: 'replace', path: '/a/01', value: 3 }], 'bad-index', 0, '/a/01'],
  ['add beyond end', { a: [1] }, [{ op: 'add', path: '/a/2', value: 3 }], 'bad-index', 0, '/a/2'],
  ['replace at length', { a: [1] }, [{ op: 'replace', path: '/a/1', value: 3 }], 'missing-target', 0, '/a/1'],
  ['remove dash', { a: [1] }, [{ op: 'remove', path: '/a/-' }], 'missing-target', 0, '/a/-'],
  ['remove missing', { a: 1 }, [{ op: 'remove', path: '/b' }], 'missing-target', 0, '/b'],
  ['replace missing', { a: 1 }, [{ op: 'replace', path: '/b', value: 1 }], 'missing-target', 0, '/b'],
  ['add under missing', { a: 1 }, [{ op: 'add', path: '/b/c', value: 1 }], 'missing-target', 0, '/b/c'],
  ['add under scalar', { a: 1 }, [{ op: 'add', path: '/a/c', value: 1 }], 'missing-target', 0, '/a/c'],
  [
    'safe-replace under scalar',
    { a: 1 },
    [{ op: 'safe-replace', path: '/a/b/c', value: 1 }],
    'missing-target',
    0,
    '/a/b/c',
  ],
  [
    'safe-replace under missing array element',
    { a: [] },
    [{ op: 'safe-replace', path: '/a/0/c', value: 1 }],
    'missing-target',
    0,
    '/a/0/c',
  ],
  ['safe-replace beyond end', { a: [] }, [{ op: 'safe-replace', path: '/a/1', value: 1 }], 'bad-index', 0, '/a/1'],
  [
    'test failed',
    { a: 1 },
    [
      { op: 'test', path: '/a', value: 1 },
      { op: 'test', path: '/a', value: '1' },
    ],
    'test-failed',
    1,
    '/a',
  ],
  ['remove root', { a: 1 }, [{ op: 'remove', path: '' }], 'bad-pointer', 0, ''],
];
for (const [name, doc, ops, code, index, path] of errors) {
  test(`error: ${name}`, () => {
    const err = failure(doc, ops);
    assert.is(err.code, 'invalid-patch');
    assert.is(err.status, 400);
    assert.is(err.info?.code, code);
    assert.is(err.info?.['op-index'], index);
    assert.is(err.info?.path, path);
  });
}

test('copy or move anywhere is unsupported, even after another broken op', () => {
  const err = failure({ a: 1 }, [{ op: 'spam' }, { op: 'move', from: '/a', path: '/b' }]);
  assert.is(err.code, 'unsupported-operation');
  assert.equal(err.info, { code: 'unsupported-op', 'op-index': 1, op: 'move' });
});

test('an error message names the op index and path but not the document', () => {
  const err = failure({ secret: 'hunter2' }, [{ op: 'remove', path: '/nope' }]);
  assert.match(err.message, '0');
  assert.match(err.message, '/nope');
  assert.not.match(err.message, 'hunter2');
});

test('a failed test (reported by fast-json-patch) names the op, not the document', () => {
  const err = failure({ secret: 'hunter2', n: { deep: 'also-secret' } }, [
    { op: 'test', path: '/secret', value: 'guess' },
  ]);
  assert.equal(err.info, { code: 'test-failed', 'op-index': 0, path: '/secret' });
  assert.not.match(err.message, 'hunter2');
  assert.not.match(err.message, 'also-secret');
  assert.not.match(err.message, 'guess');
});

test('scalar parents are described by kind, never by value', () => {
  const err = failure({ token: 's3cret' }, [{ op: 'add', path: '/token/x', value: 1 }]);
  assert.is(err.info?.code, 'missing-target');
  assert.not.match(err.message, 's3cret');
});

test('__proto__ is plain data for every operation, also below safe-replace', () => {
  const out = applyJsonPatch({}, [
    { op: 'safe-replace', path: '/__proto__/x', value: 1 },
    { op: 'test', path: '/__proto__', value: { x: 1 } },
    { op: 'replace', path: '/__proto__/x', value: 2 },
  ]);
  assert.ok(isObject(out));
  assert.is(Object.getPrototypeOf(out), Object.prototype);
  assert.equal(JSON.stringify(out), '{"__proto__":{"x":2}}');
});

// ---- behaviour ----

test('all or nothing: a later failure leaves the input untouched', () => {
  const doc = { a: 1, list: [1, 2] };
  failure(doc, [
    { op: 'add', path: '/b', value: 2 },
    { op: 'remove', path: '/list/0' },
    { op: 'remove', path: '/zzz' },
  ]);
  assert.equal(doc, { a: 1, list: [1, 2] });
});

test('the result shares nothing with the input or the ops', () => {
  const doc = { a: { b: 1 } };
  const value = { c: [1] };
  const out = applyJsonPatch(doc, [{ op: 'add', path: '/v', value }]);
  assert.ok(isObject(out));
  assert.is.not(out, doc);
  assert.is.not(out.a, doc.a);
  assert.is.not(out.v, value);
});

test('safe-remove ignores a missing target, parent, index or scalar parent', () => {
  const doc = { a: 1, l: [1] };
  const ops = ['/b', '/x/y/z', '/l/5', '/l/-', '/a/b'].map((path) => ({ op: 'safe-remove', path }));
  assert.equal(applyJsonPatch(doc, ops), doc);
  assert.equal(
    applyJsonPatch(doc, [
      { op: 'safe-remove', path: '/a' },
      { op: 'safe-remove', path: '/l/0' },
    ]),
    { l: [] },
  );
});

test('safe-remove still rejects a malformed index', () => {
  assert.is(failure({ l: [1] }, [{ op: 'safe-remove', path: '/l/x' }]).info?.code, 'bad-index');
});

test('safe-replace replaces, creates the member, and creates missing parents (mkdir -p)', () => {
  const doc = { a: 1, l: [1, 2], o: {} };
  const out = applyJsonPatch(doc, [
    { op: 'safe-replace', path: '/a', value: 2 },
    { op: 'safe-replace', path: '/new', value: null },
    { op: 'safe-replace', path: '/o/k', value: 'v' },
    { op: 'safe-replace', path: '/x/y/z', value: [1] },
    { op: 'safe-replace', path: '/l/0', value: 9 },
    { op: 'safe-replace', path: '/l/2', value: 3 },
    { op: 'safe-replace', path: '/l/-', value: 4 },
  ]);
  assert.equal(out, { a: 2, l: [9, 2, 3, 4], o: { k: 'v' }, new: null, x: { y: { z: [1] } } });
});

test('add inserts into arrays, appends with -, and replaces the root with ""', () => {
  assert.equal(
    applyJsonPatch({ l: [1, 3] }, [
      { op: 'add', path: '/l/1', value: 2 },
      { op: 'add', path: '/l/-', value: 4 },
      { op: 'add', path: '/l/4', value: 5 },
    ]),
    { l: [1, 2, 3, 4, 5] },
  );
  assert.equal(applyJsonPatch({ a: 1 }, [{ op: 'add', path: '', value: { b: 2 } }]), { b: 2 });
});

test('test uses deep equality: key order is irrelevant, 1 and 1.0 are equal, types matter', () => {
  const doc = { o: { x: 1, y: [1, { a: null, b: 1.0 }] } };
  assert.equal(applyJsonPatch(doc, [{ op: 'test', path: '/o', value: { y: [1, { b: 1, a: null }], x: 1.0 } }]), doc);
  assert.is(failure(doc, [{ op: 'test', path: '/o/x', value: true }]).info?.code, 'test-failed');
  assert.is(failure(doc, [{ op: 'test', path: '/o/y', value: [{ b: 1, a: null }, 1] }]).info?.code, 'test-failed');
});

test('null values are allowed, members named like Object.prototype are plain data', () => {
  const out = applyJsonPatch({}, [
    { op: 'add', path: '/a', value: null },
    { op: 'add', path: '/__proto__', value: { polluted: true } },
  ]);
  assert.ok(isObject(out));
  assert.equal(Object.keys(out), ['a', '__proto__']);
  assert.is(Object.getPrototypeOf(out), Object.prototype);
  assert.is(failure({}, [{ op: 'remove', path: '/constructor' }]).info?.code, 'missing-target');
  assert.is(failure({}, [{ op: 'test', path: '/toString', value: null }]).info?.code, 'missing-target');
});

test('escaped pointer tokens address members with / and ~', () => {
  assert.equal(
    applyJsonPatch({ 'a/b': 1 }, [
      { op: 'replace', path: '/a~1b', value: 2 },
      { op: 'add', path: '/~0', value: 3 },
    ]),
    { 'a/b': 2, '~': 3 },
  );
});

test.run();
