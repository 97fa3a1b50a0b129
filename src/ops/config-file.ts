/**
 * `EDGEPLANE_CONFIG=<file>`: a YAML or JSON file in the shape of `GET /v1/config` (a list of
 * objects with `x-path`, or YAML documents), applied at start as ONE transaction of the root
 * tenant through the same multi-object write path as `PATCH /v1/config` (replace by default,
 * `x-operation` per object). Like `kubectl apply`, it is idempotent: an object equal to the
 * stored one is not written, so a second start with the same file changes nothing (same
 * ETags; a delete of an object already gone is passed over). Any problem (unreadable file, bad syntax, an invalid object) fails the whole file
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

/** The file read and parsed into its changes. */
export type ConfigFile = { file: string; changes: ReturnType<typeof multiObjectChanges> };

/**
 * Reads and parses the file: its problems (unreadable, bad syntax, not objects with x-path)
 * are found before the process writes anything (the secret store's key, the admin user).
 */
export function readConfigFile(file: string): ConfigFile {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigFileError(`EDGEPLANE_CONFIG ${file}: cannot read the file: ${errorText(err)}`);
  }
  try {
    return { file, changes: multiObjectChanges(parseBody(text, contentType(file, text)).docs, 'replace') };
  } catch (err) {
    if (err instanceof ApiError) throw new ConfigFileError(`EDGEPLANE_CONFIG ${file}: ${describe(err)}`);
    throw err;
  }
}

type TxDeps = Pick<AppDeps, 'store' | 'strongbox' | 'settings'> & { auth?: AppDeps['auth'] };

/**
 * The file's changes without the deletes of objects that are already gone (and not made earlier
 * in the file): a file that deletes an object applies again at every start, as kubectl's
 * `delete --ignore-not-found`, where the second start failed ("it does not exist") for good.
 */
async function applicable(cfg: ConfigFile, deps: TxDeps): Promise<ConfigFile['changes']> {
  const out: ConfigFile['changes'] = [];
  const written = new Set<string>();
  for (const c of cfg.changes) {
    const at = `${c.tenant ?? deps.settings.tenant}\u0000${c.path}`;
    if (
      c.op === 'delete' &&
      !written.has(at) &&
      !(await deps.store.get(configKey(c.tenant ?? deps.settings.tenant, c.path)))
    )
      continue;
    if (c.op !== 'delete') written.add(at);
    out.push(c);
  }
  return out;
}

async function run(cfg: ConfigFile, deps: TxDeps, mode: 'validate' | 'commit') {
  return runTransaction(
    {
      store: deps.store,
      strongbox: deps.strongbox,
      tenant: deps.settings.tenant,
      rootTenant: deps.settings.tenant,
      // A revision of the history like any other change, made by the file.
      actor: 'EDGEPLANE_CONFIG',
      ...(deps.auth ? { tenants: deps.auth.tenants, committed: (keys: string[]) => deps.auth!.invalidate(keys) } : {}),
    },
    await applicable(cfg, deps),
    mode,
  );
}

/**
 * The file's objects checked as the write would check them, without writing: run before the
 * admin user is made, so that a file with a mistake stops the first start before it makes an
 * account whose generated password only that start prints.
 */
export async function checkConfigFile(cfg: ConfigFile, deps: TxDeps): Promise<void> {
  try {
    await run(cfg, deps, 'validate');
  } catch (err) {
    if (err instanceof ApiError) throw new ConfigFileError(`EDGEPLANE_CONFIG ${cfg.file}: ${describe(err)}`);
    throw err;
  }
}

/** Applies the file; resolves to how many objects it changed (0 when all were as in the file). */
export async function applyConfigFile(
  file: string | ConfigFile,
  deps: AppDeps,
): Promise<{ changed: number; objects: number }> {
  const cfg = typeof file === 'string' ? readConfigFile(file) : file;
  try {
    const { changes } = cfg;
    const before = new Map<string, string>();
    for (const c of changes) {
      const e = await deps.store.get(configKey(c.tenant ?? deps.settings.tenant, c.path));
      if (!e) continue;
      before.set(c.path, e.etag);
    }
    const result = await run(cfg, deps, 'commit');
    const changed = changes.filter((c) => result.etags[c.path] !== before.get(c.path)).length;
    return { changed, objects: changes.length };
  } catch (err) {
    if (err instanceof ApiError) throw new ConfigFileError(`EDGEPLANE_CONFIG ${cfg.file}: ${describe(err)}`);
    throw err;
  }
}
