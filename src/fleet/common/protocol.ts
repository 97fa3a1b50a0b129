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

export function compareVersions(a: string, b: string): number {
  const x = parseVersion(a) ?? [0n, 0n];
  const y = parseVersion(b) ?? [0n, 0n];
  return x[0] !== y[0] ? (x[0] < y[0] ? -1 : 1) : x[1] === y[1] ? 0 : x[1] < y[1] ? -1 : 1;
}

/** The sync request header that carries the site's public key (base64url, 32 bytes). */
export const siteKeyHeader = 'x-edgeplane-site-key';
