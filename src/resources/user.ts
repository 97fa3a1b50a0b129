/**
 * A user (`system/users/<name>`). `password` is write-only: it is hashed into
 * `password-hash` before the object reaches the store, and `password-hash` is never shown.
 */
import { ApiError } from '../lib/errors.js';
import type { JsonObject } from '../lib/json.js';
import { hashPassword, isPasswordHash, maxPasswordLength, verifyPassword } from '../secrets/passwords.js';
import type { Schema } from './schemas.js';
import { userSchema } from './schemas.js';
import { resource, type ResourceModule } from './module.js';

export const passwordHashField = 'password-hash';

/**
 * The write-path hook: returns the object to store. A `password` is hashed into
 * `password-hash`; without one, a well-formed `password-hash` already in `obj` is kept (the
 * merged result of a PATCH), else the one of `previous` (a PUT that leaves the password
 * alone keeps it). A `password-hash` that is not one of ours is a 400, never stored.
 */
export async function prepareUserForStore(obj: JsonObject, previous?: JsonObject): Promise<JsonObject> {
  const out: JsonObject = { ...obj };
  const password = out.password;
  delete out.password;
  if (password !== undefined) {
    if (typeof password !== 'string' || password.length === 0 || password.length > maxPasswordLength) {
      throw new ApiError(
        'invalid-value',
        `Cannot accept the user: password must be a non-empty string of at most ${maxPasswordLength} characters`,
        { code: 'invalid-password', path: '/password' },
      );
    }
    out[passwordHashField] = await hashPassword(password);
    return out;
  }
  const given = out[passwordHashField];
  if (given !== undefined) {
    if (!isPasswordHash(given)) {
      throw new ApiError(
        'invalid-value',
        'Cannot accept the user: password-hash is set by the server; send password instead',
        { code: 'invalid-password-hash', path: `/${passwordHashField}` },
      );
    }
    return out;
  }
  const kept = previous?.[passwordHashField];
  if (isPasswordHash(kept)) out[passwordHashField] = kept;
  return out;
}

/**
 * The password rule of a write: when it names the user's current password (it verifies
 * against the stored hash), or names none (a saved export written back: reads never show the
 * hash), the object keeps that hash, so writing the same user again (EDGEPLANE_CONFIG at every
 * start, `ctl apply` of the same file or of an export) changes nothing, ETag and history
 * included; any other password is hashed anew when stored (`prepareUserForStore`).
 */
export async function settleUser(after: JsonObject, before: JsonObject | undefined): Promise<JsonObject> {
  const password = after.password;
  const hash = before?.[passwordHashField];
  if (password === undefined && after[passwordHashField] === undefined && isPasswordHash(hash))
    return { ...after, [passwordHashField]: hash };
  if (typeof password !== 'string' || typeof hash !== 'string' || !(await verifyPassword(password, hash))) return after;
  const { password: _omit, ...rest } = after;
  return { ...rest, [passwordHashField]: hash };
}

/** A user object as clients may see it: without password-hash (and never a password). */
export function redactUser(obj: JsonObject): JsonObject {
  const out: JsonObject = { ...obj };
  delete out[passwordHashField];
  delete out.password;
  return out;
}

export const user: ResourceModule = resource({
  id: 'user',
  segments: ['system', 'users'],
  shape: 'list',
  schema: userSchema,
  ordered: new Set(),
  needsUnsealed: false,
  settle: settleUser,
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
});
