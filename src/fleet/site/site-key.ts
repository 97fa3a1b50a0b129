/**
 * An edge site's own X25519 key pair (the control plane seals the site's secrets for its
 * public part: control/sealing.ts): made at first start, kept in the store's kv area with the
 * private part encrypted under the site's own secret store's master key, and held by the
 * secret store so synced secrets open in memory.
 */
import { isObject } from '../../lib/json.js';
import { log } from '../../lib/log.js';
import type { Store } from '../../store/store.js';
import { generateSiteKey, keyId, loadSitePrivateKey } from '../../secrets/sealed.js';
import type { Strongbox } from '../../secrets/strongbox.js';

/** kv key of the site's own key pair. */
const ownKey = 'fleet:site-key';
const ownKeyClaim = 'fleet:site-key-claim';
const keyContext = 'fleet:site-key';

type StoredKey = { public: string; private: string };

function parseStored(text: string | undefined): StoredKey | undefined {
  if (text === undefined) return undefined;
  try {
    const doc = JSON.parse(text) as unknown;
    if (isObject(doc) && typeof doc.public === 'string' && typeof doc.private === 'string')
      return { public: doc.public, private: doc.private };
  } catch {
    /* unreadable: made again below */
  }
  return undefined;
}

/** At an edge site: the public part of its key pair, readable while its secret store is sealed. */
export async function storedPublicKey(store: Store): Promise<string | undefined> {
  return parseStored(await store.kvGet(ownKey))?.public;
}

/**
 * At an edge site: loads the site's key pair into the secret store (which must be unsealed),
 * making it on first use. Several processes of one site on one Redis: one claim makes it, the
 * others wait for it. Returns the public key.
 */
export async function loadSiteKey(store: Store, box: Strongbox, site: string, waitMs = 10_000): Promise<string> {
  const deadline = Date.now() + waitMs;
  for (let round = 0; round < 1000; round++) {
    const stored = parseStored(await store.kvGet(ownKey));
    if (stored) {
      const key = loadSitePrivateKey(box.decrypt(stored.private, keyContext));
      box.holdSiteKey(site, key);
      return key.publicKey;
    }
    if ((await store.kvIncr(ownKeyClaim, 1, waitMs)) === 1) {
      const made = generateSiteKey();
      const doc: StoredKey = { public: made.publicKey, private: box.encrypt(made.privateDer, keyContext) };
      await store.kvSet(ownKey, JSON.stringify(doc));
      log('info', 'fleet: made this site’s key pair (its secrets are sealed for it)', {
        site,
        kid: keyId(made.publicKey),
      });
      continue;
    }
    if (Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('the site key pair is being made by another process of this site and did not appear');
}
