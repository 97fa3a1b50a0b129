/**
 * Topics named `system:...` (the audit trail among them) carry every tenant's events: only
 * exporters of the root tenant may read them. Other topics are each tenant's own
 * (bus/tenant-topics.ts maps a tenant's topic to its stream).
 */
export const reservedTopicPrefix = 'system:';

/** The audit trail (auth/audit.ts): written by the server alone, read by the root tenant. */
export const auditTrailTopic = 'system:audit-trail-log';

export function topicAllowed(topic: string, tenant: string, rootTenant: string): boolean {
  return tenant === rootTenant || !topic.startsWith(reservedTopicPrefix);
}
