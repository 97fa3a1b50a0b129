/**
 * Each resource's paths and store keys derive from its segments (src/resources/paths.ts):
 * pathOf/keyOf fill the holes and name the item, parseKey reads a key back and refuses a key
 * of any other resource, of the list itself or of a deeper object.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { resources } from '../../src/resources/index.js';
import { secret } from '../../src/resources/secret.js';
import { settings } from '../../src/resources/settings.js';
import { site } from '../../src/resources/site.js';
import { anyKeyOf } from '../../src/resources/paths.js';
import { webhook } from '../../src/resources/webhook/index.js';

test('pathOf and keyOf: the list, an item, a nested item, a singleton, a route template', () => {
  assert.is(webhook.pathOf(), 'volga/webhooks');
  assert.is(webhook.pathOf('a'), 'volga/webhooks/a');
  assert.is(webhook.keyOf('default', 'a'), 'default/volga/webhooks/a');
  assert.is(secret.pathOf('hooks'), 'strongbox/vaults/hooks/secrets');
  assert.is(secret.keyOf('t1', 'hooks', 'sink'), 't1/strongbox/vaults/hooks/secrets/sink');
  assert.is(settings.keyOf('default'), 'default/system/settings');
  assert.is(site.pathOf(':name'), 'sites/:name');
});

test('parseKey reads back what keyOf writes, and only that', () => {
  assert.equal(webhook.parseKey('default/volga/webhooks/a'), { tenant: 'default', names: ['a'], name: 'a' });
  assert.equal(secret.parseKey('t1/strongbox/vaults/hooks/secrets/sink'), {
    tenant: 't1',
    names: ['hooks', 'sink'],
    name: 'sink',
  });
  assert.equal(settings.parseKey('default/system/settings'), { tenant: 'default', names: [], name: undefined });
  for (const key of [
    'default/volga/webhooks',
    'default/volga/webhooks/a/b',
    'default/volga/webhooks/',
    'default/sites/a',
    '/volga/webhooks/a',
    '~fleet/sync',
  ])
    assert.is(webhook.parseKey(key), undefined, key);
  assert.is(secret.parseKey('t1/strongbox/vaults/hooks'), undefined);
  // Names are taken as written, whatever characters they hold (parseKey compiles a regex).
  assert.equal(webhook.parseKey('t.1/volga/webhooks/a.b+c(d)')?.names, ['a.b+c(d)']);
  assert.is(webhook.parseKey('default/volga/webhooksX/a'), undefined);
});

test('every resource reads back its own keys and no other resource claims them', () => {
  for (const r of resources) {
    const names = r.segments.filter((s) => s.startsWith(':')).map((_, i) => `n${i}`);
    if (r.shape === 'list') names.push('item');
    const key = r.keyOf('tenant-a', ...names);
    assert.equal(r.parseKey(key)?.names, names, r.id);
    assert.equal(
      resources.filter((o) => o.parseKey(key)).map((o) => o.id),
      [r.id],
      key,
    );
  }
});

test('anyKeyOf: one test for the keys of several resources, the same answer as their parseKey', () => {
  const isOf = anyKeyOf([webhook, secret, settings]);
  for (const r of resources) {
    const names = r.segments.filter((s) => s.startsWith(':')).map((_, i) => `n${i}`);
    if (r.shape === 'list') names.push('item');
    const key = r.keyOf('tenant-a', ...names);
    assert.is(
      isOf(key),
      [webhook, secret, settings].some((o) => o.parseKey(key) !== undefined),
      key,
    );
  }
  assert.is(isOf('default/volga/webhooks'), false);
  assert.is(isOf('default/volga/webhooks/a/b'), false);
  assert.is(isOf('xdefault/system/settings/x'), false);
});

test.run();
