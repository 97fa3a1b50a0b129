/**
 * A secret of a vault (`strongbox/vaults/<vault>/secrets/<name>`): `{name, data: {k: v}}`.
 * Values are encrypted in the store, shown as REDACTED by a configuration read (writing
 * REDACTED back keeps the value), and in clear only by a state read of the one secret.
 */
import { isObject, type JsonObject } from '../lib/json.js';
import { ApiError } from '../lib/errors.js';
import { decryptSecret, encryptSecret, REDACTED, redactSecret, unredact } from '../secrets/secrets.js';
import { secretSchema } from './schemas.js';
import { resource, type ResourceModule } from './module.js';

export const secret: ResourceModule = resource({
  id: 'secret',
  segments: ['strongbox', 'vaults', ':vault', 'secrets'],
  shape: 'list',
  schema: secretSchema,
  ordered: new Set(),
  needsUnsealed: true,
  parent: 'vault',
  fromStored: (stored, { strongbox, key }) => decryptSecret(strongbox, key, stored),
  toStored: (after, { strongbox, key }) => encryptSecret(strongbox, key, after),
  redact: redactSecret,
  patchForm: redactSecret,
  unredact,
  // A placeholder left after unredact had no stored value to keep (an export applied to another
  // store): stored, it would be the value, and an exporter would send "(secret)" as a credential.
  check(obj, xPath) {
    if (!isObject(obj.data)) return [];
    return Object.entries(obj.data)
      .filter(([, v]) => v === REDACTED)
      .map(
        ([k]) =>
          new ApiError(
            'invalid-value',
            `Cannot use ${REDACTED} as data/${k}: it keeps a stored value, and this secret has none for ${k}; give the value (${xPath})`,
            { code: 'no-stored-value', path: `data/${k}`, 'x-path': xPath },
          ),
      );
  },
  masked(obj, hide) {
    if (!isObject(obj.data)) return obj;
    return { ...obj, data: Object.fromEntries(Object.entries(obj.data).map(([k, v]) => [k, hide(v)])) };
  },
  itemState(stored, { strongbox, key, name }): JsonObject {
    const plain = decryptSecret(strongbox, key, stored);
    return { name: plain.name ?? name, dict: isObject(plain.data) ? plain.data : {} };
  },
  itemStateSchema: {
    type: 'object',
    properties: { name: { type: 'string' }, dict: { type: 'object', additionalProperties: { type: 'string' } } },
  },
});
