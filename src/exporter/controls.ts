/**
 * Delivery controls of an exporter, compiled from its configuration (`controlsOf`) and made
 * live for one run (`startControls`): `enabled`, `dead-letter-topic`, `retry-on`, `signing`,
 * `max-in-flight: auto`, plus the attempt log and the per-origin circuit breakers every
 * exporter has. deliver.ts and exporter.ts call into `RunControls` at a few marked places.
 */
import type { Bus } from '../bus/bus.js';
import { ApiError } from '../lib/errors.js';
import type { JsonObject } from '../lib/json.js';
import { topicAllowed } from '../bus/topics.js';
import type { Store } from '../store/store.js';
import { AdaptiveLimit } from './adaptive.js';
import { AttemptLog, attemptsKey } from './attempts.js';
import { Breakers } from './breaker.js';
import type { Clock } from '../lib/clock.js';
import { DeadLetter } from './dead-letter.js';
import { compileRetryOn, type RetryOn } from './retry-on.js';
import { Signer, signingSecretVar, signingVar } from './signing.js';
import type { RetryPolicy } from './retry.js';
import type { SecretVar } from './secret-vars.js';
import type { ExporterState } from './state.js';

export type ControlsSpec = {
  enabled: boolean;
  deadLetterTopic: string | undefined;
  retryOn: RetryOn | undefined;
  /** The vault secret holding the whsec_ key, read with the other secret variables. */
  signing: SecretVar | undefined;
  adaptive: boolean;
};

const bad = (path: string, message: string) => new ApiError('invalid-value', message, { code: 'invalid-config', path });

export function controlsOf(cfg: JsonObject, tenant: string, rootTenant: string): ControlsSpec {
  const dlt = cfg['dead-letter-topic'];
  if (dlt !== undefined && typeof dlt !== 'string')
    throw bad('dead-letter-topic', 'Cannot use dead-letter-topic: it must be a topic name');
  if (typeof dlt === 'string' && !topicAllowed(dlt, tenant, rootTenant))
    throw bad('dead-letter-topic', `Cannot write to topic ${dlt}: system: topics are for the root tenant only`);
  const signing = signingSecretVar(cfg.signing, tenant);
  if (cfg.signing !== undefined && !signing) throw bad('signing', 'Cannot use signing: it needs vault, secret and key');
  return {
    enabled: cfg.enabled !== false,
    deadLetterTopic: typeof dlt === 'string' ? dlt : undefined,
    retryOn: compileRetryOn(cfg['retry-on']),
    signing,
    adaptive: cfg['max-in-flight'] === 'auto',
  };
}

export type RunControls = {
  signer: Signer | undefined;
  deadLetter: DeadLetter | undefined;
  retryOn: RetryOn | undefined;
  breakers: Breakers;
  attempts: AttemptLog;
  limiter: AdaptiveLimit | undefined;
  close(): Promise<void>;
};

export function startControls(o: {
  /** The parts of the exporter's spec (spec.ts) the controls use. */
  spec: { tenant: string; name: string; policy: RetryPolicy; controls: ControlsSpec };
  bus: Bus;
  store: Store;
  clock: Clock;
  state: ExporterState;
  secrets: ReadonlyMap<string, string>;
}): RunControls {
  const c = o.spec.controls;
  const secret = c.signing ? o.secrets.get(signingVar) : undefined;
  const breakers = new Breakers(o.clock, o.spec.policy.baseMs, o.spec.policy.maxMs, {
    onChange(next, reason) {
      o.state.nextAttempt(next, reason, o.clock.now());
    },
  });
  const attempts = new AttemptLog(o.store, attemptsKey(o.spec.tenant, o.spec.name));
  const limiter = c.adaptive ? new AdaptiveLimit() : undefined;
  o.state.inFlightLimit = limiter ? () => limiter.limit : undefined;
  return {
    // Throws (the exporter goes to status error) when the vault value is not a whsec_ key.
    signer: secret !== undefined ? new Signer(() => o.secrets.get(signingVar)) : undefined,
    deadLetter: c.deadLetterTopic ? new DeadLetter(o.bus, c.deadLetterTopic, o.clock) : undefined,
    retryOn: c.retryOn,
    breakers,
    attempts,
    limiter,
    async close() {
      breakers.close();
      await attempts.close();
    },
  };
}
