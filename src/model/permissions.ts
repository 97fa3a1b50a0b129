/**
 * The operation → permission rule of a write: which policy operations a change of the
 * transaction needs on its path (`/v1/config/<path>`). delete and remove need `delete`,
 * update (a patch) `update`, create `create`; replace may create or update, so it needs
 * both unless the caller is allowed one of them only, which then decides what is refused.
 * The decisions themselves are the caller's compiled policies (auth/), bound to the caller by
 * the API and handed to the transaction as `Permissions`.
 */
import type { Operation } from '../resources/policy/rules.js';
import type { Change, Op, Permissions } from './tx-types.js';

/** The policy operation a transaction operation needs (replace: `update`, as on an existing object). */
export function operationOf(op: Op): Operation {
  return op === 'delete' || op === 'remove' ? 'delete' : op === 'create' ? 'create' : 'update';
}

/** Throws an ApiError when `perms` may not make `change` (see above). */
export function authorizeChange(perms: Permissions, change: Change): void {
  const path = `/v1/config/${change.path}`;
  const t = change.tenant;
  if (change.op === 'replace') {
    if (!perms.allows(path, 'create', t) || !perms.allows(path, 'update', t))
      perms.authorize(path, perms.allows(path, 'create', t) ? 'update' : 'create', t);
  } else perms.authorize(path, operationOf(change.op), t);
}
