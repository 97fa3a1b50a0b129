/**
 * The site-token check's memory (src/fleet/control/site-tokens.ts): two control-plane processes
 * sharing one Redis store, each with its own store client. A token issued in one process
 * revokes the previous one there at once; the other process, which remembered the previous
 * token's id, refuses it within tokenCacheMs (waited for here with a bound, not timed).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openRedisStore } from '../../src/store/redis.js';
import type { Store } from '../../src/store/store.js';
import {
  checkedTokenId,
  isIdOfToken,
  isTokenOf,
  issueSiteToken,
  siteOfToken,
  tokenCacheMs,
} from '../../src/fleet/control/site-tokens.js';
import { freshTarget } from '../helpers/backends.js';
import { eventually } from '../helpers/wait.js';

const stores: Store[] = [];
test.after(async () => {
  for (const s of stores) await s.close();
});

test('a new token revokes the old one at once where it was issued, and within tokenCacheMs in another process', async () => {
  const target = await freshTarget('redis');
  const a = await openRedisStore(target);
  const b = await openRedisStore(target);
  stores.push(a, b);
  const first = await issueSiteToken(a, 'edge-1');
  // Both processes check it (and remember its id).
  assert.ok(await isTokenOf(a, 'edge-1', first));
  assert.ok(await isTokenOf(b, 'edge-1', first));
  assert.is(await siteOfToken(b, first), 'edge-1');
  const second = await issueSiteToken(a, 'edge-1');
  assert.not.ok(await isTokenOf(a, 'edge-1', first), 'refused at once where it was issued');
  assert.ok(await isTokenOf(a, 'edge-1', second));
  await eventually(
    async () => !(await isTokenOf(b, 'edge-1', first)) && (await isTokenOf(b, 'edge-1', second)),
    'the other process refuses the replaced token',
    tokenCacheMs * 10,
  );
  assert.is(await siteOfToken(b, first), undefined);
  assert.not.ok(await isTokenOf(b, 'edge-2', second), "another site's token");
  // The form a sync stream checks at each step: the token's id, hashed once.
  assert.ok(await isIdOfToken(a, 'edge-1', checkedTokenId(second)));
  assert.not.ok(await isIdOfToken(a, 'edge-1', checkedTokenId(first)), 'the replaced token');
  assert.not.ok(await isIdOfToken(a, 'edge-2', checkedTokenId(second)), "another site's token");
  assert.is(checkedTokenId('not a token'), '');
  assert.not.ok(await isIdOfToken(a, 'edge-1', ''), 'what cannot be a token');
});

test.run();
