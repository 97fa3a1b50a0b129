/** What the HTTP layer is built from; worker.ts assembles it. */
import type { Settings } from '../settings.js';
import type { Store } from '../store/store.js';
import type { Strongbox } from '../secrets/strongbox.js';
import type { Auth, Principal } from '../auth/index.js';
import type { Bus } from '../bus/index.js';
import type { JsonObject } from '../json.js';
import type { Fleet } from '../fleet/index.js';

/** The exporter runtime as the API sees it (absent in a process that serves only the API). */
export type RuntimeView = {
  exporterState(tenant: string, name: string): JsonObject | undefined;
  restart(tenant: string, name: string): Promise<boolean>;
};

export type AppDeps = {
  settings: Settings;
  store: Store;
  strongbox: Strongbox;
  auth: Auth;
  bus: Bus;
  runtime?: RuntimeView;
  /** The fleet role (src/fleet/): control plane or edge site. */
  fleet?: Fleet;
};

export type AppEnv = { Variables: { principal?: Principal } };
