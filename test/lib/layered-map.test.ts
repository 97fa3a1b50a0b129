/** LayeredMap (src/lib/layered-map.ts): a map with some values replaced, read like the map it stands for. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { LayeredMap } from '../../src/lib/layered-map.js';

const base = new Map<string, number>(Array.from({ length: 100 }, (_, i) => [`k${String(i).padStart(3, '0')}`, i]));

test('the same keys in the same order, with the replaced values; the base untouched', () => {
  const one = LayeredMap.replacing(base, new Map([['k005', -5]]));
  const two = LayeredMap.replacing(
    one,
    new Map([
      ['k007', -7],
      ['k005', -55],
    ]),
  );
  const expected = [...base].map(([k, v]) => [k, k === 'k005' ? -55 : k === 'k007' ? -7 : v]);
  assert.equal([...two], expected);
  assert.equal([...two.entries()], expected);
  assert.equal([...two.keys()], [...base.keys()]);
  assert.equal(
    [...two.values()],
    expected.map(([, v]) => v),
  );
  const each: unknown[] = [];
  two.forEach((v, k) => each.push([k, v]));
  assert.equal(each, expected);
  assert.is(two.size, 100);
  assert.is(two.get('k005'), -55);
  assert.is(two.get('k006'), 6);
  assert.is(two.get('nope'), undefined);
  assert.ok(two.has('k099') && !two.has('nope'));
  assert.is(one.get('k005'), -5, 'an earlier layer keeps its values');
  assert.is(one.get('k007'), 7);
  assert.is(base.get('k005'), 5, 'the base is never written');
});

test('once the replaced values pass a sixteenth of the base (and 64), a plain map again', () => {
  let m: ReadonlyMap<string, number> = base;
  for (let i = 0; i < 70; i++) m = LayeredMap.replacing(m, new Map([[`k${String(i).padStart(3, '0')}`, -i]]));
  assert.ok(m instanceof LayeredMap, '70 replaced (64 + 100 / 16): still layered');
  m = LayeredMap.replacing(m, new Map([['k099', -99]]));
  assert.ok(!(m instanceof LayeredMap) && m instanceof Map);
  assert.equal(
    [...m],
    [...base].map(([k, v]) => [k, k === 'k099' ? -99 : v < 70 ? -v : v]),
  );
});

test.run();
