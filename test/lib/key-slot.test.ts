/** lib/redis-cluster.ts: the Cluster slot of a key (CRC16 of its hash tag) and a tag for each slot. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { keySlot, slotCount, slotTags } from '../../src/lib/redis-cluster.js';

test('keySlot answers what CLUSTER KEYSLOT answers (values from the Redis documentation)', () => {
  assert.is(keySlot('123456789'), 0x31c3 % 16384, 'the CRC16-XMODEM check value');
  assert.is(keySlot('foo'), 12182);
  assert.is(keySlot('somekey'), 11058);
  assert.is(keySlot('{user1000}.following'), keySlot('{user1000}.followers'), 'a hash tag decides');
  assert.is(keySlot('{user1000}.following'), keySlot('user1000'));
  assert.is.not(keySlot('foo{}{bar}'), keySlot('bar'), 'an empty first tag: the whole key is hashed');
  assert.is(keySlot('foo{{bar}}zap'), keySlot('{bar'), 'the tag is what lies between the first { and the next }');
});

test('slotTags: one short tag for every slot, hashing to that slot', () => {
  const tags = slotTags();
  assert.is(tags.length, slotCount);
  for (let s = 0; s < slotCount; s++) {
    if (keySlot(`ep:fleet:{${tags[s]!}}:appended`) !== s) assert.unreachable(`slot ${s}: tag ${tags[s]!}`);
  }
  assert.ok(Math.max(...tags.map((t) => t.length)) <= 4, 'at most four characters');
  assert.is(slotTags(), tags, 'found once');
});

test.run();
