/**
 * The embedded store's DATA_DIR at start: created when missing, checked writable, and locked
 * so that one process only uses it (two would interleave their appends to store.aof).
 *
 * The lock is the file `DATA_DIR/edgeplane.lock`, created whole and exclusively (a hard link to
 * a file written first), holding the owner's pid and (on Linux) its start time. A lock whose owner is gone — killed with kill -9, or a pid
 * now used by another program (its start time differs), or a zombie (killed and not yet reaped
 * by its parent, as under `npm start`) — is stale: it is replaced, so a crash never blocks the
 * next start. An owner that still runs is waited for a few seconds (one that is stopping lets
 * go of the lock meanwhile) before the start is refused. The lock file is removed at a normal exit.
 */
import {
  accessSync,
  constants,
  existsSync,
  linkSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { errorText } from '../lib/error-text.js';

/** Why DATA_DIR cannot be used, in words for the start-up line. */
export class DataDirError extends Error {}

export type DataDirLock = { path: string; release(): void };

type Owner = { pid: number; start?: string };

/** Fields 3 on of /proc/<pid>/stat (state, ppid, ...), when the system tells them. */
function statOf(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: count from the last ')'.
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** Start time of a process (field 22 of /proc/<pid>/stat), when the system tells it. */
function startTimeOf(pid: number): string | undefined {
  return statOf(pid)?.[19];
}

/** How long a start waits for a lock's owner that still runs to go away. */
const OWNER_WAIT_MS = 3000;

function alive(owner: Owner): boolean {
  if (owner.pid === process.pid) return false; // a lock from a former life of this pid (a container restart)
  try {
    process.kill(owner.pid, 0);
  } catch (err) {
    // EPERM: the pid exists but belongs to another user, so it runs.
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const stat = statOf(owner.pid);
  // A zombie (Z) or dead (X) process has exited: only its parent has not reaped it yet.
  if (stat?.[0] === 'Z' || stat?.[0] === 'X') return false;
  const now = stat?.[19];
  return owner.start === undefined || now === undefined || now === owner.start;
}

/** Whether `owner` still runs after waiting up to OWNER_WAIT_MS for it to go (checked every 100 ms). */
function stillAlive(owner: Owner): boolean {
  const deadline = Date.now() + OWNER_WAIT_MS;
  const pause = new Int32Array(new SharedArrayBuffer(4));
  while (alive(owner)) {
    if (Date.now() >= deadline) return true;
    Atomics.wait(pause, 0, 0, 100); // start-up is synchronous here; nothing else runs yet
  }
  return false;
}

function readOwner(path: string): Owner | undefined {
  try {
    const v = JSON.parse(readFileSync(path, 'utf8')) as Partial<Owner>;
    return typeof v.pid === 'number'
      ? { pid: v.pid, ...(typeof v.start === 'string' ? { start: v.start } : {}) }
      : undefined;
  } catch {
    return undefined; // unreadable or half-written: nobody can prove they own it
  }
}

/**
 * `mkdir -p`, one level at a time: Node's recursive mkdirSync loops forever where a parent
 * exists but refuses children with ENOENT (/proc/nope: 100 % CPU, deaf to SIGTERM). `mode` is
 * the last level's: DATA_DIR itself is made 0700 (it holds password hashes, tokens' digests,
 * the audit trail and every message of the embedded bus).
 */
function makeDirs(dir: string, mode = 0o777): void {
  if (existsSync(dir)) return;
  const parent = dirname(dir);
  if (parent !== dir) makeDirs(parent);
  try {
    mkdirSync(dir, { mode });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
}

/** Creates DATA_DIR when missing and checks this process may write there; throws DataDirError. */
export function prepareDataDir(dir: string): void {
  try {
    makeDirs(resolve(dir), 0o700);
  } catch (err) {
    throw new DataDirError(`cannot create ${dir} (${errorText(err)})`);
  }
  try {
    accessSync(dir, constants.R_OK | constants.W_OK | constants.X_OK);
  } catch (err) {
    throw new DataDirError(`cannot read and write ${dir} (${errorText(err)})`);
  }
}

/**
 * `path` as a copy of `from`, failing with EEXIST when it exists: a hard link (whole at once),
 * or on a file system without hard links an exclusive create and a write.
 */
function exclusiveCopy(from: string, path: string): void {
  try {
    linkSync(from, path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP') throw err;
    writeFileSync(path, readFileSync(from), { flag: 'wx', mode: 0o644 });
  }
}

const sameOwner = (a: Owner | undefined, b: Owner | undefined) =>
  a === undefined ? b === undefined : b !== undefined && a.pid === b.pid && a.start === b.start;

/**
 * Removes the lock judged stale (its owner `stale` is gone). Moved aside first and checked: when
 * another process starting at the same time already replaced it with a lock of its own, that
 * lock is put back instead (and the next attempt finds it held).
 */
function removeStale(path: string, stale: Owner | undefined): void {
  const aside = `${path}.stale.${process.pid}`;
  try {
    renameSync(path, aside);
  } catch {
    return; // already moved by another process: try again
  }
  if (!sameOwner(readOwner(aside), stale)) {
    try {
      linkSync(aside, path);
    } catch {
      // A third process took the name meanwhile: the next attempt reads its lock.
    }
  }
  rmSync(aside, { force: true });
}

/** Takes DATA_DIR's lock or throws DataDirError naming the process that holds it. */
export function lockDataDir(dir: string): DataDirLock {
  const path = join(dir, 'edgeplane.lock');
  const me: Owner = { pid: process.pid };
  const start = startTimeOf(process.pid);
  if (start !== undefined) me.start = start;
  // The lock file appears whole or not at all: written under a name of this process's own,
  // then linked to the lock's name (link fails when the name exists, like O_EXCL). Created in
  // place, another process starting at the same instant could find it still empty, take it for
  // a torn lock and replace it.
  const mine = `${path}.${process.pid}`;
  writeFileSync(mine, JSON.stringify(me) + '\n', { mode: 0o644 });
  try {
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        exclusiveCopy(mine, path);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST')
          throw new DataDirError(`cannot create ${path} (${errorText(err)})`);
        const owner = readOwner(path);
        if (owner && stillAlive(owner))
          throw new DataDirError(
            `${dir} is in use by another edgeplane process (pid ${owner.pid}); one process per DATA_DIR — use REDIS_URL to run several`,
          );
        removeStale(path, owner);
        continue;
      }
      let released = false;
      const release = () => {
        if (released) return;
        released = true;
        const owner = readOwner(path);
        if (owner?.pid === process.pid) rmSync(path, { force: true });
      };
      process.once('exit', release);
      return { path, release };
    }
  } finally {
    rmSync(mine, { force: true });
  }
  throw new DataDirError(`cannot take the lock ${path}: it keeps changing (another process starting?)`);
}
