/**
 * `EDGEPLANE_CONFIG=<file>`: a YAML or JSON file in the shape of `GET /v1/config` (a list of
 * objects with `x-path`, or YAML documents), applied at start as ONE transaction of the root
 * tenant through the same multi-object write path as `PATCH /v1/config` (replace by default,
 * `x-operation` per object). Like `kubectl apply`, it is idempotent: an object equal to the
 * stored one is not written, so a second start with the same file changes nothing (same
 * ETags). Any problem (unreadable file, bad syntax, an invalid object) fails the whole file
 * with a ConfigFileError naming the file and the problem: nothing is applied.
 */
import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { ApiError } from '../lib/errors.js';
import type { AppDeps } from '../api/deps.js';
import { parseBody } from '../api/body.js';
import { multiObjectChanges } from '../api/multi-object.js';
import { configKey } from '../store/keys.js';
import { runTransaction } from '../model/transaction.js';
import { errorText } from '../lib/error-text.js';

export class ConfigFileError extends Error {}

/** A transaction error as one line: each problem with where it is. */
function describe(err: ApiError): string {
  return [err, ...err.more]
    .map((e) => {
      const info = e.info ?? {};
      const where = [info['x-path'], info.path, info.line !== undefined ? `line ${String(info.line)}` : undefined]
        .filter((w) => w !== undefined && w !== '')
        .join(' ');
      return where && !e.message.includes(String(info['x-path'] ?? '\u0000')) ? `${e.message} (${where})` : e.message;
    })
    .join('; ');
}

function contentType(file: string, text: string): string {
  const ext = extname(file).toLowerCase();
  if (ext === '.json') return 'application/json';
  if (ext === '.yaml' || ext === '.yml') return 'application/yaml';
  return /^\s*[[{]/.test(text) ? 'application/json' : 'application/yaml';
}

/** Applies the file; resolves to how many objects it changed (0 when all were as in the file). */
export async function applyConfigFile(file: string, deps: AppDeps): Promise<{ changed: number; objects: number }> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigFileError(`EDGEPLANE_CONFIG ${file}: cannot read the file: ${errorText(err)}`);
  }
  try {
    const body = parseBody(text, contentType(file, text));
    const changes = multiObjectChanges(body.docs, 'replace');
    const before = new Map<string, string>();
    for (const c of changes) {
      const e = await deps.store.get(configKey(c.tenant ?? deps.settings.tenant, c.path));
      if (!e) continue;
      before.set(c.path, e.etag);
    }
    const result = await runTransaction(
      {
        store: deps.store,
        strongbox: deps.strongbox,
        tenant: deps.settings.tenant,
        rootTenant: deps.settings.tenant,
        tenants: deps.auth.tenants,
        committed: (keys) => deps.auth.invalidate(keys),
      },
      changes,
      'commit',
    );
    const changed = changes.filter((c) => result.etags[c.path] !== before.get(c.path)).length;
    return { changed, objects: changes.length };
  } catch (err) {
    if (err instanceof ApiError) throw new ConfigFileError(`EDGEPLANE_CONFIG ${file}: ${describe(err)}`);
    throw err;
  }
}
