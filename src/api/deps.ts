/** What the HTTP layer is built from; worker.ts assembles it. */
import type { Settings } from '../lib/settings.js';
import type { Store } from '../store/store.js';
import type { Strongbox } from '../secrets/strongbox.js';
import type { Auth, Principal } from '../auth/index.js';
import type { Bus } from '../bus/index.js';
import type { JsonObject } from '../lib/json.js';
import type { ProbeCheck } from '../ops/probes.js';
import type { Metrics } from '../ops/metrics.js';
import type { DeliveredHistory } from './history.js';
import type { Fleet } from '../fleet/index.js';

/** The exporter runtime as the API sees it (absent in a process that serves only the API). */
export type RuntimeView = {
  exporterState(tenant: string, name: string): JsonObject | undefined;
  exporterStates?(): Array<{ tenant: string; name: string; state: JsonObject }>;
  restart(tenant: string, name: string): Promise<boolean>;
  /** Calls `listener` after exporter states were published (watches of /v1/state follow them). */
  onStateChange?(listener: () => void): () => void;
  rewind?(tenant: string, name: string, apply: (running: string[]) => Promise<void>): Promise<void>;
};

export type AppDeps = {
  settings: Settings;
  store: Store;
  strongbox: Strongbox;
  auth: Auth;
  bus: Bus;
  runtime?: RuntimeView;
  /** Readiness checks besides store, bus and secret store (GET /readyz). */
  readyChecks?: ProbeCheck[];
  /** Where requests and deliveries are counted (one is made when absent). */
  metrics?: Metrics;
  /** Samples of exporter counters for the status page (api/history.ts). */
  history?: DeliveredHistory;
  /** The fleet role (src/fleet/): control plane or edge site. */
  fleet?: Fleet;
};

export type AppEnv = { Variables: { principal?: Principal } };
