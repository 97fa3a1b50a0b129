import type { JsonObject } from '../lib/json.js';

/** The exporter runtime as the API sees it (absent in a process that serves only the API). */
export type RuntimeView = {
  exporterState(tenant: string, name: string): JsonObject | undefined;
  exporterStates?(): Array<{ tenant: string; name: string; state: JsonObject }>;
  restart(tenant: string, name: string): Promise<boolean>;
  /** Calls `listener` after exporter states were published (watches of /v1/state follow them). */
  onStateChange?(listener: () => void): () => void;
  /** False (nothing moved) when the exporter is placed on other sites than this process's. */
  rewind?(tenant: string, name: string, apply: (running: string[]) => Promise<void>): Promise<boolean>;
};
