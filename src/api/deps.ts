/** What the HTTP layer is built from; worker.ts assembles it. */
import type { Settings } from '../settings.js';
import type { Store } from '../store/store.js';
import type { Strongbox } from '../secrets/strongbox.js';
import type { Auth, Principal } from '../auth/index.js';
import type { Bus } from '../bus/index.js';
import type { JsonObject } from '../json.js';

/** The exporter runtime as the API sees it (absent in a process that serves only the API). */
export type RuntimeView = {
  exporterState(tenant: string, name: string): JsonObject | undefined;
  restart(tenant: string, name: string): Promise<boolean>;
  rewind?(tenant: string, name: string, apply: (running: string[]) => Promise<void>): Promise<void>;
};

export type AppDeps = {
  settings: Settings;
  store: Store;
  strongbox: Strongbox;
  auth: Auth;
  bus: Bus;
  runtime?: RuntimeView;
};

export type AppEnv = { Variables: { principal?: Principal } };
