/**
 * Audit trail: one message per write request and per login on the bus topic
 * `system:audit-trail-log` (JSON payload), so a webhook exporter can forward it. An event
 * names who, which path (never the query string), the method, the status and the time —
 * never a body, so never a password or a secret value.
 */
import type { Bus } from '../bus/bus.js';
import { repeatingLog } from '../lib/log.js';
import { errorText } from '../lib/error-text.js';
import { auditTrailTopic } from '../bus/topics.js';

export const auditTopic = auditTrailTopic;

export type AuditEvent = {
  /** The authenticated user, or the username tried at login; null when there was no valid token. */
  user: string | null;
  tenant: string | null;
  method: string;
  path: string;
  status: number;
  /** ISO 8601 UTC with milliseconds. */
  time: string;
  'client-address': string;
};

export type AuditSink = (event: AuditEvent) => Promise<void>;

/** The sink used in production: produce each event to the audit topic. */
export function auditToBus(bus: Pick<Bus, 'produce'>, producerName = 'edgeplane-api'): AuditSink {
  return async (event) => {
    await bus.produce(auditTopic, { payload: JSON.stringify(event), 'producer-name': producerName, time: event.time });
  };
}

/**
 * Lost audit events: the first at once, then one line every 30 s with how many went unlogged
 * (an outage of the bus would otherwise log one error line per request, as the outage's own
 * lines are rate-limited so).
 */
const lostEvents = repeatingLog();

/**
 * Records an event without ever failing the request it describes: a bus outage is logged
 * (the request already happened; refusing to answer would not undo it).
 */
export async function record(sink: AuditSink, event: AuditEvent): Promise<void> {
  try {
    await sink(event);
    lostEvents.ended();
  } catch (err) {
    lostEvents('error', 'audit event not recorded', {
      method: event.method,
      path: event.path,
      status: event.status,
      error: errorText(err),
    });
  }
}
