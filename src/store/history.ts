/**
 * The configuration history: every committed transaction that carries a note is a revision
 * (CONTRACT §11). The note travels with the commit and is written by the same atomic step as
 * the objects (Redis: the commit script's XADD; embedded: the commit's line of the append-only
 * file), so a revision exists exactly when its commit does.
 *
 *   revision   the store's commit counter after the commit (so revision numbers have gaps
 *              where a commit carried no note: a site applying what its control plane sent)
 *   time, user, tenant   when, who, and the tenant the request was made in
 *   changes    per object: its key and its stored form before and after (absent: it did not
 *              exist); secrets are stored encrypted, so the history never holds one in clear,
 *              and reads redact them as every configuration read does
 *
 * Retention: revisions older than CONFIG_HISTORY (default 30 days) are dropped as new ones are
 * written (Redis) or when the store opens (embedded).
 */
import type { JsonObject } from '../lib/json.js';

export type RevisionChange = { key: string; before?: JsonObject; after?: JsonObject };
export type RevisionNote = { time: string; user: string; tenant: string; changes: RevisionChange[] };
export type StoredRevision = RevisionNote & { revision: number };

export const defaultHistoryMs = 30 * 86_400_000;

/**
 * The note as stored (one JSON text), and back; undefined when the text is not a note.
 * `textOf` gives the JSON text already made for an object (the commit serialises what it
 * stores anyway), so the note does not serialise it again; the text is JSON.stringify's.
 */
export function encodeNote(note: RevisionNote, textOf?: (value: JsonObject) => string | undefined): string {
  if (!textOf) return JSON.stringify(note);
  const json = (v: JsonObject) => textOf(v) ?? JSON.stringify(v);
  const changes = note.changes.map(
    (c) =>
      `{"key":${JSON.stringify(c.key)}` +
      (c.before !== undefined ? `,"before":${json(c.before)}` : '') +
      (c.after !== undefined ? `,"after":${json(c.after)}` : '') +
      '}',
  );
  return (
    `{"time":${JSON.stringify(note.time)},"user":${JSON.stringify(note.user)},` +
    `"tenant":${JSON.stringify(note.tenant)},"changes":[${changes.join(',')}]}`
  );
}

export function decodeNote(revision: number, text: string): StoredRevision | undefined {
  try {
    const v = JSON.parse(text) as RevisionNote;
    if (typeof v !== 'object' || v === null || !Array.isArray(v.changes) || typeof v.time !== 'string')
      return undefined;
    return { revision, time: v.time, user: String(v.user), tenant: String(v.tenant), changes: v.changes };
  } catch {
    return undefined;
  }
}
