/**
 * Delivery controls of an exporter, compiled from its configuration (`controlsOf` in
 * resources/webhook/spec.ts) and made live for one run (`startControls`): `enabled`, `dead-letter-topic`, `retry-on`, `signing`,
 * `max-in-flight: auto`, plus the attempt log and the per-origin circuit breakers every
 * exporter has. deliver.ts and exporter.ts call into `RunControls` at a few marked places.
 */
import type { Bus } from '../bus/bus.js';
import type { Store } from '../store/store.js';
import { AdaptiveLimit } from './adaptive.js';
import { AttemptLog, attemptsKey } from './attempts.js';
import { Breakers } from './breaker.js';
import type { Clock } from '../lib/clock.js';
import { DeadLetter } from './dead-letter.js';
import type { RetryOn } from '../resources/webhook/retry-on.js';
import { signingVar } from '../resources/webhook/spec.js';
import type { ExporterSpec } from '../resources/webhook/spec.js';
import { Signer } from './signing.js';
import { RateLimit } from './rate-limit.js';
import type { ExporterState } from './state.js';

export type RunControls = {
  signer: Signer | undefined;
  deadLetter: DeadLetter | undefined;
  retryOn: RetryOn | undefined;
  breakers: Breakers;
  attempts: AttemptLog;
  limiter: AdaptiveLimit | undefined;
  /** rate-limit (CONTRACT §12): a token per attempt. */
  rate: RateLimit | undefined;
  close(): Promise<void>;
};

export function startControls(o: {
  spec: ExporterSpec;
  bus: Bus;
  store: Store;
  clock: Clock;
  state: ExporterState;
  secrets: ReadonlyMap<string, string>;
  site: string;
}): RunControls {
  const rl = o.spec.ext.rateLimit;
  const c = o.spec.controls;
  const secret = c.signing ? o.secrets.get(signingVar) : undefined;
  const breakers = new Breakers(o.clock, o.spec.policy.baseMs, o.spec.policy.maxMs, {
    onChange(next, reason) {
      o.state.breakerChanged(next !== undefined, reason, o.clock.now());
    },
  });
  const attempts = new AttemptLog(o.store, attemptsKey(o.spec.tenant, o.spec.name));
  const limiter = c.adaptive ? new AdaptiveLimit() : undefined;
  o.state.inFlightLimit = limiter ? () => limiter.limit : undefined;
  return {
    // Throws (the exporter goes to status error) when the vault value is not a whsec_ key.
    signer: secret !== undefined ? new Signer(() => o.secrets.get(signingVar)) : undefined,
    deadLetter: c.deadLetterTopic ? new DeadLetter(o.bus, c.deadLetterTopic, o.clock, o.state) : undefined,
    retryOn: c.retryOn,
    breakers,
    attempts,
    limiter,
    rate: rl ? new RateLimit(o.bus, o.spec.name, o.site, rl.perSecond, rl.burst, o.clock) : undefined,
    async close() {
      breakers.close();
      await attempts.close();
    },
  };
}
