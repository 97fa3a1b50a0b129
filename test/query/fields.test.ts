import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { expectApiError } from '../helpers/assert.js';
import { compileFields } from '../../src/query/fields.js';
import { ApiError } from '../../src/lib/errors.js';
import type { Json, JsonObject } from '../../src/lib/json.js';

const hook: JsonObject = {
  name: 'h1',
  url: 'https://x',
  'site-placement': { 'all-sites': true },
  headers: [
    { name: 'a', value: '1' },
    { name: 'b', value: '2' },
  ],
  tls: { verify: false, ca: { pem: 'P', file: 'F' } },
  tags: ['t1', 't2'],
};

const cases: Array<[string, Json]> = [
  ['name', { name: 'h1' }],
  ['name,url', { name: 'h1', url: 'https://x' }],
  [' name , url ', { name: 'h1', url: 'https://x' }],
  ['site-placement/all-sites', { 'site-placement': { 'all-sites': true } }],
  ['tls/[verify,ca/pem]', { tls: { verify: false, ca: { pem: 'P' } } }],
  ['tls/ca/[pem]', { tls: { ca: { pem: 'P' } } }],
  ['tls=security/verify', { security: { verify: false } }],
  ['tls=s/ca=c/file', { s: { c: { file: 'F' } } }],
  ['name=id,url', { id: 'h1', url: 'https://x' }],
  ['tls/verify,tls/ca/file', { tls: { verify: false, ca: { file: 'F' } } }],
  ['tls/verify,tls', { tls: hook['tls'] ?? null }],
  ['tls,tls/verify', { tls: hook['tls'] ?? null }],
  // Lists are projected item by item.
  ['headers/value', { headers: [{ value: '1' }, { value: '2' }] }],
  ['headers/[name=n]', { headers: [{ n: 'a' }, { n: 'b' }] }],
  ['tags', { tags: ['t1', 't2'] }],
  // Absent fields are absent from the output, at every level.
  ['missing', {}],
  ['name,missing', { name: 'h1' }],
  ['tls/missing', {}],
  ['name/sub', {}],
  ['tags/x', {}],
  ['headers/missing', {}],
  ['constructor', {}],
];
for (const [text, want] of cases) {
  test(`fields=${text}`, () => assert.equal(compileFields(text).apply(hook), want));
}

test('a non-object is returned as it is; an object is not modified', () => {
  const f = compileFields('a');
  assert.is(f.apply('text'), 'text');
  const obj: JsonObject = { a: { b: 1 }, c: 2 };
  const out = f.apply(obj);
  assert.equal(out, { a: { b: 1 } });
  assert.equal(obj, { a: { b: 1 }, c: 2 });
});

const errors: Array<[string, string, number]> = [
  ['', 'syntax', 0],
  ['a,', 'syntax', 2],
  [',a', 'syntax', 0],
  ['a//b', 'syntax', 2],
  ['a/', 'syntax', 2],
  ['a/[b', 'syntax', 4],
  ['a/[b]c', 'syntax', 5],
  ['a/[]', 'syntax', 3],
  ['a]', 'syntax', 1],
  ['a=', 'syntax', 2],
  ['a=x=y', 'syntax', 3],
  ['=x', 'syntax', 0],
  ['a b', 'syntax', 2],
  ['a=x/b,a=y/c', 'conflicting-rename', 6],
  ['a=x,a/b', 'conflicting-rename', 4],
  ['a/[b=x],a/[c,b=y]', 'conflicting-rename', 13],
  // One output name given by two fields: a rename onto a selected field, or two renames.
  ['name=url,url', 'duplicate-output', 9],
  ['url,name=url', 'duplicate-output', 4],
  ['a=x,b=x', 'duplicate-output', 4],
  ['t/[a=b,b]', 'duplicate-output', 7],
  ['t/[a=b],t/[b]', 'duplicate-output', 11],
];
for (const [text, code, position] of errors) {
  test(`fields error ${code} at ${position}: ${JSON.stringify(text)}`, () => {
    expectApiError(() => compileFields(text), 'invalid-query', { code: code, position: position, parameter: 'fields' });
  });
}

test('known() is asked about every path and rejects with the position of the name', () => {
  const asked: string[] = [];
  const known = (path: string[]) => {
    asked.push(path.join('/'));
    return path[path.length - 1] !== 'bogus';
  };
  compileFields('name,tls/[verify,ca/pem]', { known });
  assert.equal(asked, ['name', 'tls', 'tls/verify', 'tls/ca', 'tls/ca/pem']);
  try {
    compileFields('name,tls/[verify,bogus]', { known });
    assert.unreachable();
  } catch (err) {
    const e = err as ApiError;
    assert.equal([e.info?.code, e.info?.position, e.info?.parameter], ['unknown-field', 17, 'fields']);
  }
});

test.run();
