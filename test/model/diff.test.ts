import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { JsonObject } from '../../src/lib/json.js';
import { diffObjects, type FieldChange } from '../../src/model/diff.js';

const change = (field: string, added: string[], deleted: string[]): FieldChange => ({ field, added, deleted });

// name, before, after, expected changes (default ordered arrays: headers, management-ipv4-access-list)
const cases: Array<[string, JsonObject | undefined, JsonObject | undefined, FieldChange[]]> = [
  ['nothing to nothing', undefined, undefined, []],
  ['equal objects', { a: 1, o: { b: [1, 2] } }, { o: { b: [2, 1] }, a: 1 }, []],
  ['changed string', { a: 'x' }, { a: 'y' }, [change('a', ['y'], ['x'])]],
  [
    'number, boolean and null as text',
    { n: 1, b: true, z: null },
    { n: 1.5, b: false, z: 0 },
    [change('b', ['false'], ['true']), change('n', ['1.5'], ['1']), change('z', ['0'], ['null'])],
  ],
  ['added member', { a: 1 }, { a: 1, b: 'x' }, [change('b', ['x'], [])]],
  ['deleted member', { a: 1, b: 'x' }, { a: 1 }, [change('b', [], ['x'])]],
  [
    'nested member path',
    { topology: { 'parent-site': 'a' } },
    { topology: { 'parent-site': 'b' } },
    [change('topology/parent-site', ['b'], ['a'])],
  ],
  [
    'slash and tilde in member names are escaped',
    { labels: { 'app/tier': 'x', 'a~b': '1' } },
    { labels: { 'app/tier': 'y', 'a~b': '1' } },
    [change('labels/app~1tier', ['y'], ['x'])],
  ],
  ['empty object and array are leaves', {}, { o: {}, l: [] }, [change('l', ['[]'], []), change('o', ['{}'], [])]],
  ['object replaced by scalar', { o: { x: 1 } }, { o: 2 }, [change('o', ['2'], []), change('o/x', [], ['1'])]],
  [
    'scalar set: set difference, order ignored',
    { topics: ['a', 'b', 'c'] },
    { topics: ['c', 'd', 'a', 'e'] },
    [change('topics', ['d', 'e'], ['b'])],
  ],
  ['scalar set emptied', { topics: ['a'] }, { topics: [] }, [change('topics', ['[]'], ['a'])]],
  [
    'named entries addressed by name',
    { hosts: [{ name: 'h1', labels: { a: '1' } }, { name: 'h2' }] },
    { hosts: [{ name: 'h2' }, { name: 'h1', labels: { a: '2' } }, { name: 'h3', labels: {} }] },
    [
      change('hosts[name=h1]/labels/a', ['2'], ['1']),
      change('hosts[name=h3]/labels', ['{}'], []),
      change('hosts[name=h3]/name', ['h3'], []),
    ],
  ],
  [
    'unnamed object entries as canonical JSON',
    { v: [{ b: 1, a: 2 }] },
    { v: [{ a: 2, b: 1 }, { c: [] }] },
    [change('v', ['{"c":[]}'], [])],
  ],
  [
    'ordered access list compared by position',
    { 'management-ipv4-access-list': ['10.0.0.0/8', '1.2.3.0/24'] },
    { 'management-ipv4-access-list': ['1.2.3.0/24', '10.0.0.0/8', '5.0.0.0/8'] },
    [
      change('management-ipv4-access-list[0]', ['1.2.3.0/24'], ['10.0.0.0/8']),
      change('management-ipv4-access-list[1]', ['10.0.0.0/8'], ['1.2.3.0/24']),
      change('management-ipv4-access-list[2]', ['5.0.0.0/8'], []),
    ],
  ],
  [
    'ordered headers compared by position',
    {
      headers: [
        { name: 'a', value: '1' },
        { name: 'b', value: '2' },
      ],
    },
    { headers: [{ name: 'a', value: '9' }] },
    [
      change('headers[0]/value', ['9'], ['1']),
      change('headers[1]/name', [], ['b']),
      change('headers[1]/value', [], ['2']),
    ],
  ],
];
for (const [name, before, after, expected] of cases) {
  test(name, () => assert.equal(diffObjects(before, after), expected));
}

const exporter: JsonObject = {
  name: 'w1',
  topics: ['t1', 't2'],
  'site-placement': { 'all-sites': true },
  url: 'https://example.com/${TOPIC}',
  tries: 3,
  headers: [{ name: 'content-type', value: 'application/json' }],
  variables: [{ name: 'tok', 'value-from-vault-secret': { vault: 'v', secret: 's', key: 'k' } }],
};

test('creation adds every leaf, sorted by field', () => {
  assert.equal(diffObjects(undefined, exporter), [
    change('headers[0]/name', ['content-type'], []),
    change('headers[0]/value', ['application/json'], []),
    change('name', ['w1'], []),
    change('site-placement/all-sites', ['true'], []),
    change('topics', ['t1', 't2'], []),
    change('tries', ['3'], []),
    change('url', ['https://example.com/${TOPIC}'], []),
    change('variables[name=tok]/name', ['tok'], []),
    change('variables[name=tok]/value-from-vault-secret/key', ['k'], []),
    change('variables[name=tok]/value-from-vault-secret/secret', ['s'], []),
    change('variables[name=tok]/value-from-vault-secret/vault', ['v'], []),
  ]);
});

test('deletion deletes every leaf, the mirror of creation', () => {
  const created = diffObjects(undefined, exporter);
  assert.equal(
    diffObjects(exporter, undefined),
    created.map((c) => change(c.field, [], c.added)),
  );
});

test('an explicit ordered predicate replaces the default', () => {
  const before = { topics: ['a', 'b'], headers: ['x', 'y'] };
  const after = { topics: ['b', 'a'], headers: ['y', 'x'] };
  assert.equal(
    diffObjects(before, after, (p) => p[0] === 'topics'),
    [change('topics[0]', ['b'], ['a']), change('topics[1]', ['a'], ['b'])],
  );
});

test('nested arrays in entries use member paths for the ordered predicate', () => {
  const seen: string[] = [];
  diffObjects({ hosts: [{ name: 'h', tags: ['x'] }] }, undefined, (p) => {
    seen.push(p.join('/'));
    return false;
  });
  assert.equal(seen.sort(), ['hosts', 'hosts/tags']);
});

test('inputs are not modified and the result is deterministic', () => {
  const before = structuredClone(exporter);
  const after = { ...structuredClone(exporter), tries: 4, topics: ['t3'] };
  const a = diffObjects(before, after);
  assert.equal(a, diffObjects(before, after));
  assert.equal(before, exporter);
  assert.equal(a, [change('topics', ['t3'], ['t1', 't2']), change('tries', ['4'], ['3'])]);
});

test("keyed lists with another key (a site's hosts by host-id) are addressed by it", () => {
  const keyOf = (p: readonly string[]) => (p.join('/') === 'hosts' ? 'host-id' : 'name');
  assert.equal(
    diffObjects(
      { hosts: [{ 'host-id': 'h1', labels: { a: '1' } }] },
      { hosts: [{ 'host-id': 'h1', labels: { a: '2' } }] },
      undefined,
      keyOf,
    ),
    [change('hosts[host-id=h1]/labels/a', ['2'], ['1'])],
  );
});

test.run();
