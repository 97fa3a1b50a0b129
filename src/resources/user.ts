/**
 * A user (`system/users/<name>`). `password` is write-only: it is hashed into
 * `password-hash` before the object reaches the store, and `password-hash` is never shown.
 */
import { prepareUserForStore, redactUser, passwordHashField } from '../auth/users.js';
import type { Schema } from './schemas.js';
import { userSchema } from './schemas.js';
import type { ResourceModule } from './module.js';

export const user: ResourceModule = {
  id: 'user',
  segments: ['system', 'users'],
  shape: 'list',
  schema: userSchema,
  ordered: new Set(),
  needsUnsealed: false,
  toStored: (after, { before }) => prepareUserForStore(after, before),
  redact: redactUser,
  masked(obj, hide) {
    const out = { ...obj };
    for (const f of ['password', passwordHashField]) if (out[f] !== undefined) out[f] = hide(out[f]);
    return out;
  },
  publicSchema(schema): Schema {
    const props = { ...(schema.properties as Record<string, Schema>) };
    delete props[passwordHashField];
    props.password = { ...props.password, writeOnly: true };
    return { ...schema, properties: props };
  },
};
