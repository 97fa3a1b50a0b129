/**
 * Values sealed for an edge site (src/secrets/sealed.ts): only the site's private key opens
 * them, only for the site, object and member they were sealed for, and any altered part fails.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  generateSiteKey,
  isPublicKeyText,
  keyId,
  loadSitePrivateKey,
  open,
  seal,
  sealedFingerprint,
} from '../../src/secrets/sealed.js';
import { Strongbox } from '../../src/secrets/strongbox.js';
import { ApiError } from '../../src/lib/errors.js';
import { openEmbeddedStore } from '../../src/store/embedded.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const site = generateSiteKey();
const key = loadSitePrivateKey(site.privateDer);
const ctx = 'edgeplane-fleet:edge-1:default/strongbox/vaults/v/secrets/s#token';

test('a sealed value opens with the site key and shows neither the value nor its encodings', () => {
  assert.is(key.publicKey, site.publicKey);
  assert.ok(isPublicKeyText(site.publicKey));
  const plain = 'hunter2-very-secret';
  const sealed = seal(site.publicKey, plain, ctx, 'tag0');
  assert.match(sealed, /^sealed:v1:/);
  for (const form of [plain, Buffer.from(plain).toString('base64'), Buffer.from(plain).toString('hex')])
    assert.not.ok(sealed.includes(form));
  assert.is(open(key, sealed, ctx), plain);
  assert.is.not(seal(site.publicKey, plain, ctx, 'tag0'), sealed, 'each sealing is fresh');
  assert.is(sealedFingerprint(sealed), `${keyId(site.publicKey)}.tag0`);
});

test('another context (site, object, member), another key or an altered value does not open', () => {
  const sealed = seal(site.publicKey, 'v', ctx, 't');
  assert.throws(() => open(key, sealed, ctx.replace('edge-1', 'edge-2')), /did not authenticate/);
  assert.throws(() => open(key, sealed, ctx.replace('#token', '#other')), /did not authenticate/);
  const other = loadSitePrivateKey(generateSiteKey().privateDer);
  assert.throws(() => open(other, sealed, ctx), /another key of this site/);
  const parts = sealed.split('.');
  const ct = Buffer.from(parts[4]!, 'base64url');
  ct[0] = ct[0]! ^ 1;
  parts[4] = ct.toString('base64url');
  assert.throws(() => open(key, parts.join('.'), ctx), /did not authenticate/);
  assert.throws(() => open(key, 'enc:v1:x', ctx), /not a sealed value/);
  assert.not.ok(isPublicKeyText('short'));
  assert.not.ok(isPublicKeyText('A'.repeat(44)));
});

test("the store's openSealed: a value sealed for another key of the site is a 503 sealed naming why (it was a 500 on a secret's state read)", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'edgeplane-sealed-'));
  const store = await openEmbeddedStore(dir);
  try {
    const box = new Strongbox(store);
    await box.init();
    box.holdSiteKey('edge-1', key);
    const storeKey = 'default/strongbox/vaults/v/secrets/s';
    const other = generateSiteKey();
    const sealed = seal(other.publicKey, 'hunter2', 'edgeplane-fleet:edge-1:' + storeKey + '#token', 'tag0');
    const err = (() => {
      try {
        box.openSealed(sealed, storeKey, 'token');
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    assert.ok(err instanceof ApiError, String(err));
    assert.is(err.code, 'sealed');
    assert.match(
      err.message,
      /^Cannot open default\/strongbox\/vaults\/v\/secrets\/s: it is sealed for another key of this site/,
    );
    assert.not.ok(err.message.includes('hunter2'));
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
