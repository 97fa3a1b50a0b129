/**
 * What travels between a control plane and its edge sites, known to both sides: a change-log
 * entry and its changes, the version order (a Redis stream ID, `<ms>-<seq>`, ordered like
 * Kubernetes' resourceVersion; `0-0` is the empty start), and the header that carries the
 * site's public key on every sync request.
 */
import type { JsonObject } from '../../lib/json.js';

export type FleetChange = { op: 'put'; key: string; value: JsonObject } | { op: 'delete'; key: string };
export type FleetEntry = { version: string; changes: FleetChange[] };

/** A stream ID as a pair of bigints, or undefined when `v` is not one. */
export function parseVersion(v: string): [bigint, bigint] | undefined {
  const m = /^(\d{1,20})-(\d{1,20})$/.exec(v);
  return m ? [BigInt(m[1]!), BigInt(m[2]!)] : undefined;
}

/** A version whose parts are exact as numbers (15 digits each at most: below 2^53). */
const smallVersion = /^\d{1,15}-\d{1,15}$/;

/** Orders two versions (anything that is not one as `0-0`); compared on every change a stream sends and a site applies. */
export function compareVersions(a: string, b: string): number {
  if (a === b) return 0;
  if (smallVersion.test(a) && smallVersion.test(b)) {
    const i = a.indexOf('-');
    const j = b.indexOf('-');
    const ms = Number(a.slice(0, i)) - Number(b.slice(0, j));
    const d = ms !== 0 ? ms : Number(a.slice(i + 1)) - Number(b.slice(j + 1));
    return d < 0 ? -1 : d > 0 ? 1 : 0;
  }
  const x = parseVersion(a) ?? [0n, 0n];
  const y = parseVersion(b) ?? [0n, 0n];
  return x[0] !== y[0] ? (x[0] < y[0] ? -1 : 1) : x[1] === y[1] ? 0 : x[1] < y[1] ? -1 : 1;
}

/** The sync request header that carries the site's public key (base64url, 32 bytes). */
export const siteKeyHeader = 'x-edgeplane-site-key';
