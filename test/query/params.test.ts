import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseQuery, queryParams, type ParsedQuery } from '../../src/query/params.js';
import { ApiError } from '../../src/lib/errors.js';

const all = queryParams;
const parse = (qs: string, allowed: readonly string[] = all): ParsedQuery =>
  parseQuery(new URLSearchParams(qs), allowed);

test('no parameter: every boolean false, nothing compiled', () => {
  assert.equal(parse(''), {
    keys: false,
    count: false,
    sendEtag: false,
    includeTenantConfig: false,
    dryRun: false,
    validate: false,
    watch: false,
  });
});

const booleans: Array<[string, keyof ParsedQuery]> = [
  ['keys', 'keys'],
  ['count', 'count'],
  ['send-etag', 'sendEtag'],
  ['include-tenant-config', 'includeTenantConfig'],
  ['dry-run', 'dryRun'],
  ['validate', 'validate'],
  ['watch', 'watch'],
];
for (const [name, field] of booleans) {
  test(`${name}: no value, =, =true are true; =false is false; others are 400`, () => {
    assert.is(parse(name)[field], true);
    assert.is(parse(`${name}=`)[field], true);
    assert.is(parse(`${name}=true`)[field], true);
    assert.is(parse(`${name}=false`)[field], false);
    for (const bad of ['yes', '1', 'TRUE']) {
      try {
        parse(`${name}=${bad}`);
        assert.unreachable();
      } catch (err) {
        const e = err as ApiError;
        assert.is(e.status, 400);
        assert.equal([e.info?.code, e.info?.parameter], ['bad-value', name]);
      }
    }
  });
}

const values: Array<[string, Partial<ParsedQuery>]> = [
  ['with-defaults', { withDefaults: 'report-all' }],
  ['with-defaults=true', { withDefaults: 'report-all' }],
  ['with-defaults=report-all', { withDefaults: 'report-all' }],
  ['with-defaults=trim', { withDefaults: 'trim' }],
  ['with-defaults=explicit', { withDefaults: 'explicit' }],
  ['with-defaults=false', {}],
  ['content=config', { content: 'config' }],
  ['content=nonconfig', { content: 'nonconfig' }],
  ['content=all', { content: 'all' }],
  ['default-operation=create', { defaultOperation: 'create' }],
  ['default-operation=replace', { defaultOperation: 'replace' }],
  ['default-operation=update', { defaultOperation: 'update' }],
  ['default-operation=delete', { defaultOperation: 'delete' }],
  ['default-operation=remove', { defaultOperation: 'remove' }],
  ['site=stockholm', { site: 'stockholm' }],
];
for (const [qs, want] of values) {
  test(qs, () => {
    const got = parse(qs);
    for (const [k, v] of Object.entries(want)) assert.is(got[k as keyof ParsedQuery], v);
    if (qs === 'with-defaults=false') assert.is(got.withDefaults, undefined);
  });
}

test('fields, where and match-path come back compiled', () => {
  const q = parse(`fields=name,type&where=${encodeURIComponent("type = 'edge'")}&match-path=/v1/config/sites/*`);
  assert.equal(q.fields?.apply({ name: 'a', type: 'edge', x: 1 }), { name: 'a', type: 'edge' });
  assert.is(q.where?.test({ type: 'edge' }), true);
  assert.is(q.where?.test({ type: 'cloud' }), false);
  assert.is(q.matchPath?.('/v1/config/sites/s1'), true);
  assert.is(q.matchPath?.prefix, '/v1/config/sites');
});

test('fields are checked against known() when given', () => {
  const known = (p: string[]) => p.join('/') === 'name';
  assert.equal(
    parseQuery(new URLSearchParams('fields=name'), all, { knownField: known }).fields?.apply({ name: 'n', x: 1 }),
    { name: 'n' },
  );
  try {
    parseQuery(new URLSearchParams('fields=name,x'), all, { knownField: known });
    assert.unreachable();
  } catch (err) {
    assert.equal([(err as ApiError).info?.code, (err as ApiError).info?.position], ['unknown-field', 5]);
  }
});

/** [query string, allowed, code, parameter, position or undefined]. */
const errors: Array<[string, readonly string[], string, string, number | undefined]> = [
  ['bogus=1', all, 'unknown-parameter', 'bogus', undefined],
  ['where=a', ['fields'], 'unknown-parameter', 'where', undefined],
  ['keys&keys', all, 'duplicate-parameter', 'keys', undefined],
  ['fields=a&fields=b', all, 'duplicate-parameter', 'fields', undefined],
  ['with-defaults=all', all, 'bad-value', 'with-defaults', undefined],
  ['content=', all, 'bad-value', 'content', undefined],
  ['content=state', all, 'bad-value', 'content', undefined],
  ['default-operation=merge', all, 'bad-value', 'default-operation', undefined],
  ['site=', all, 'bad-value', 'site', undefined],
  ['fields=a,', all, 'syntax', 'fields', 2],
  [`where=${encodeURIComponent('type =')}`, all, 'syntax', 'where', 6],
  [`where=${encodeURIComponent('foo(1)')}`, all, 'unknown-function', 'where', 0],
  ['match-path=/a/**/b', all, 'descendant-not-last', 'match-path', 3],
  ['keys&count', all, 'conflicting-parameters', 'keys', undefined],
  ['keys&fields=name', all, 'conflicting-parameters', 'keys', undefined],
];
for (const [qs, allowed, code, parameter, position] of errors) {
  test(`400 ${code} for ${qs}`, () => {
    try {
      parse(qs, allowed);
      assert.unreachable();
    } catch (err) {
      assert.instance(err, ApiError);
      const e = err as ApiError;
      assert.is(e.code, 'invalid-query');
      assert.is(e.status, 400);
      assert.equal([e.info?.code, e.info?.parameter, e.info?.position], [code, parameter, position]);
    }
  });
}

test.run();
