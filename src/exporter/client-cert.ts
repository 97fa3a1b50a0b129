/**
 * Mutual TLS (`client-certificate`): the Agent an exporter POSTs with, chosen per attempt from
 * the vault values it holds now. The supervisor updates those values in place when the secret
 * changes (any strongbox change), so a rotated certificate is used from the next attempt on,
 * within a second, without a restart. A value that is not a usable certificate and key keeps
 * the last good one and is reported as the last error; at start it makes the status `error`.
 */
import type { Agent } from 'undici';
import type { Clock } from '../lib/clock.js';
import { clientCertVar, clientKeyVar } from '../resources/webhook/extensions.js';
import type { TlsProfile } from '../resources/webhook/spec.js';
import { checkClientCert, type AgentPool } from './send.js';
import type { ExporterState } from './state.js';

export function clientCertAgent(o: {
  pool: AgentPool;
  tls: TlsProfile;
  attemptTimeoutMs: number;
  secrets: ReadonlyMap<string, string>;
  state: ExporterState;
  clock: Clock;
}): () => Agent {
  let cert: string | undefined;
  let key: string | undefined;
  let current: Agent | undefined;
  const pick = (): Agent => {
    const c = o.secrets.get(clientCertVar);
    const k = o.secrets.get(clientKeyVar);
    if (current && c === cert && k === key) return current;
    cert = c;
    key = k;
    try {
      if (c === undefined || k === undefined) throw new Error('client-certificate: the vault secret has no value');
      checkClientCert({ cert: c, key: k });
      current = o.pool.agentFor(o.tls, o.attemptTimeoutMs, { cert: c, key: k });
    } catch (err) {
      if (!current) throw err;
      o.state.error(`${err instanceof Error ? err.message : String(err)}; the previous one is used`, o.clock.now());
    }
    return current;
  };
  pick();
  return pick;
}
