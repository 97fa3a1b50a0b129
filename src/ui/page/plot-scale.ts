/**
 * The throughput plot's y-scale, robust to a catch-up burst: one bucket of a backlog
 * delivered at once must not squash the steady rate into the bottom pixel row. The scale
 * ends at the largest rate unless that is more than 4× the 90th percentile of the non-zero
 * rates (with at least 8 of them to judge by); then it ends at 2× that percentile, and the
 * buckets above it are bursts, which the page marks at the top edge with their real value.
 */
export type Scale = { top: number; clipped: boolean };

export function robustTop(rates: readonly number[]): Scale {
  const nonzero = rates.filter((r) => r > 0).sort((a, b) => a - b);
  const max = nonzero[nonzero.length - 1] ?? 0;
  if (nonzero.length < 8) return { top: Math.max(1, max), clipped: false };
  const p90 = nonzero[Math.floor(0.9 * (nonzero.length - 1))] as number;
  if (max <= 4 * p90) return { top: Math.max(1, max), clipped: false };
  return { top: Math.max(1, 2 * p90), clipped: true };
}
