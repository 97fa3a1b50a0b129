/**
 * The one place where metrics read the exporters: the runtime's per-exporter state (the same
 * JSON that GET /v1/state/volga/webhooks/<name> shows), turned into samples when /metrics is
 * scraped. Nothing here runs per message.
 */
import type { RuntimeView } from '../api/deps.js';
import { isObject, type JsonObject } from '../lib/json.js';

/** State counters exported as `edgeplane_exporter_<name with _>_total`. */
export const exporterCounters = ['delivered', 'dropped', 'ignored', 'filtered', 'failed-attempts'] as const;
export type ExporterCounter = (typeof exporterCounters)[number];

export type ExporterSample = {
  tenant: string;
  exporter: string;
  status: string;
  counters: Record<ExporterCounter, number>;
  inFlight: number;
  topics: Array<{ topic: string; lag: number }>;
};

const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);

export function toSample(tenant: string, exporter: string, state: JsonObject): ExporterSample {
  const counters = {} as Record<ExporterCounter, number>;
  for (const c of exporterCounters) counters[c] = num(state[c]);
  const lag = state['topic-lag'];
  const topics = Array.isArray(lag)
    ? lag.flatMap((t) => (isObject(t) && typeof t.topic === 'string' ? [{ topic: t.topic, lag: num(t.lag) }] : []))
    : [];
  return {
    tenant,
    exporter,
    status: typeof state.status === 'string' ? state.status : 'unknown',
    counters,
    inFlight: num(state['in-flight']),
    topics,
  };
}

/** Samples of every exporter the runtime of this process keeps (none without a runtime). */
export function exporterSamples(runtime: RuntimeView | undefined): ExporterSample[] {
  return (runtime?.exporterStates?.() ?? []).map((e) => toSample(e.tenant, e.name, e.state));
}
