/**
 * The embedded store's append-only file: one JSON record a line, written with writeSync on
 * a descriptor kept open, so a record is in the kernel before commit() resolves (it survives
 * a crash of the process; fsync per commit would cap commits far below 10k/s).
 *
 * Records:
 *   {"r": revision, "c": [{"k": key, "v": object} | {"k": key, "d": 1}]}   a commit
 *   ... "h": note}                      a commit that is a revision of the history (history.ts);
 *                                       compaction keeps retained notes as commits without ops
 *   {"kv": key, "s": string}                                             a kv write without TTL
 *   {"kv": key, "s": string, "x": ms since the epoch}                    a durable kv write with TTL
 *   {"kv": key, "d": 1}                                                  a kv delete
 */
import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  truncateSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { isObject, type JsonObject } from '../lib/json.js';

export type AofOp = { k: string; v: JsonObject } | { k: string; d: 1 };
export type AofRecord =
  { r: number; c: AofOp[]; h?: JsonObject } | { kv: string; s: string; x?: number } | { kv: string; d: 1 };

export type Replayed<T = AofRecord> = { records: T[]; bytes: number; tornBytes: number };

function parseRecord(line: string): AofRecord | undefined {
  let rec: unknown;
  try {
    rec = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (!isObject(rec)) return undefined;
  if (typeof rec.r === 'number' && Array.isArray(rec.c)) {
    const ops: AofOp[] = [];
    for (const op of rec.c) {
      if (!isObject(op) || typeof op.k !== 'string') return undefined;
      if (op.d === 1) ops.push({ k: op.k, d: 1 });
      else if (isObject(op.v)) ops.push({ k: op.k, v: op.v });
      else return undefined;
    }
    return isObject(rec.h) ? { r: rec.r, c: ops, h: rec.h } : { r: rec.r, c: ops };
  }
  if (typeof rec.kv === 'string') {
    if (rec.d === 1) return { kv: rec.kv, d: 1 };
    if (typeof rec.s === 'string')
      return typeof rec.x === 'number' ? { kv: rec.kv, s: rec.s, x: rec.x } : { kv: rec.kv, s: rec.s };
  }
  return undefined;
}

/**
 * The recovery routine of every append-only JSON-lines file (the store's `store.aof`, the
 * embedded bus's `bus.jsonl`): reads each line through `parse`. A last line that does not
 * parse (or lacks its newline) is what a crash mid-write leaves: it is dropped and cut off the
 * file, so the next append starts on a clean line (appended to the fragment, it would be lost
 * at the following start). A bad line anywhere else means the file was damaged otherwise:
 * that is an error.
 */
export function replayLines<T>(path: string, parse: (line: string) => T | undefined): Replayed<T> {
  if (!existsSync(path)) return { records: [], bytes: 0, tornBytes: 0 };
  const raw = readFileSync(path);
  const text = raw.toString('utf8');
  const records: T[] = [];
  let pos = 0;
  let lineNo = 0;
  while (pos < text.length) {
    lineNo++;
    const nl = text.indexOf('\n', pos);
    const line = nl < 0 ? text.slice(pos) : text.slice(pos, nl);
    const rec = nl < 0 ? undefined : line.trim() === '' ? null : parse(line);
    if (rec === undefined) {
      const rest = text.slice(nl < 0 ? text.length : nl + 1);
      if (rest.trim() !== '') throw new Error(`${path}: line ${lineNo} is not a valid record; the file is damaged`);
      const good = Buffer.byteLength(text.slice(0, pos));
      truncateSync(path, good);
      return { records, bytes: good, tornBytes: raw.length - good };
    }
    if (rec !== null) records.push(rec);
    pos = nl + 1;
  }
  return { records, bytes: raw.length, tornBytes: 0 };
}

/** The store's records (see replayLines). */
export function replay(path: string): Replayed<AofRecord> {
  return replayLines(path, parseRecord);
}

export class AofWriter {
  private fd: number | undefined;

  constructor(readonly path: string) {
    this.fd = openSync(path, 'a', 0o600);
  }

  /** `line` is one encoded record (see encode*), without the newline. */
  append(line: string): void {
    if (this.fd === undefined) throw new Error('the embedded store is closed');
    writeSync(this.fd, line + '\n');
  }

  close(): void {
    if (this.fd === undefined) return;
    fsyncSync(this.fd);
    closeSync(this.fd);
    this.fd = undefined;
  }
}

/** A put carries the object's JSON text as stored, so it is not serialised twice. */
export type EncodeOp = { k: string; text: string } | { k: string; d: 1 };

/** `note`: the revision note's JSON text, when the commit is a revision of the history. */
export function encodeCommit(r: number, ops: EncodeOp[], note?: string): string {
  const parts = ops.map((op) =>
    'text' in op ? `{"k":${JSON.stringify(op.k)},"v":${op.text}}` : `{"k":${JSON.stringify(op.k)},"d":1}`,
  );
  return `{"r":${r},"c":[${parts.join(',')}]${note !== undefined ? `,"h":${note}` : ''}}`;
}

/** `expiresAt`: a durable value with a TTL (its expiry, ms since the epoch). */
export function encodeKvSet(key: string, value: string, expiresAt?: number): string {
  return JSON.stringify(expiresAt === undefined ? { kv: key, s: value } : { kv: key, s: value, x: expiresAt });
}

export function encodeKvDel(key: string): string {
  return JSON.stringify({ kv: key, d: 1 });
}

/** Replaces the file with `lines` (encoded records) atomically: temp file, fsync, rename, fsync the dir. */
export function rewrite(path: string, lines: Iterable<string>): number {
  const tmp = path + '.tmp';
  const fd = openSync(tmp, 'w', 0o600);
  let bytes = 0;
  try {
    let chunk = '';
    for (const line of lines) {
      chunk += line + '\n';
      if (chunk.length > 1 << 20) {
        bytes += writeSync(fd, chunk);
        chunk = '';
      }
    }
    if (chunk) bytes += writeSync(fd, chunk);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
  const dirFd = openSync(join(path, '..'), 'r');
  try {
    fsyncSync(dirFd);
  } finally {
    closeSync(dirFd);
  }
  return bytes;
}

export function ensureDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
}
