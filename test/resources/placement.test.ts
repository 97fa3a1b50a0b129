/**
 * Site placement (src/resources/placement.ts): the projector's isPlacedHere answers as
 * placeHere does, and placeHere gives its reasons, for every kind of placement.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  isPlacedHere,
  placeHere,
  siteLabelRecord,
  siteLabels,
  type PlacementContext,
} from '../../src/resources/placement.js';

const ctx = (site: string, labels: Record<string, string>): PlacementContext => ({
  site,
  labels: siteLabelRecord(siteLabels(site, { name: site, labels })),
  deployments: new Map([
    ['shops', 'kind = shop'],
    ['broken', 'kind = '],
  ]),
});

const shop = ctx('edge-1', { kind: 'shop', region: 'north' });
const depot = ctx('edge-2', { kind: 'depot' });

const cases: Array<[unknown, PlacementContext, true | false | 'invalid', RegExp | undefined]> = [
  [{ 'all-sites': true }, depot, true, undefined],
  [{ 'all-sites': { 'all-sites': true } }, depot, true, undefined],
  [{ 'all-sites': false }, depot, false, /all-sites is false/],
  [{ sites: ['edge-1'] }, shop, true, undefined],
  [{ sites: ['edge-1'] }, depot, false, /site edge-2 is not listed/],
  [{ 'application-deployments': ['shops'] }, shop, true, undefined],
  [
    { 'application-deployments': ['shops', 'broken', 7] },
    depot,
    false,
    /no listed application deployment selects site edge-2/,
  ],
  [{ 'match-site-labels': 'region = north' }, shop, true, undefined],
  [{ 'match-site-labels': 'region = north' }, depot, false, /site edge-2 labels do not match/],
  [{ 'match-site-labels': 'region = ' }, shop, 'invalid', /^site-placement\/match-site-labels: ./],
  [undefined, shop, 'invalid', /site-placement is missing/],
  [{ elsewhere: true }, shop, 'invalid', /names none of/],
];

test('isPlacedHere is placeHere(...).placed === true, and each refusal says why', () => {
  for (const [placement, c, placed, reason] of cases) {
    const p = placeHere(placement, c);
    const what = `${JSON.stringify(placement)} at ${c.site}`;
    assert.is(p.placed, placed, what);
    assert.is(isPlacedHere(placement, c), placed === true, what);
    if (reason) assert.match('reason' in p ? p.reason : '', reason, what);
    else assert.not.ok('reason' in p, what);
  }
});

test.run();
