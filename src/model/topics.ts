/**
 * Topics named `system:...` (the audit trail among them) carry every tenant's events: only
 * exporters of the root tenant may read them. Other topics are shared by all tenants of a
 * site (tenant-scoped topic names are not part of the contract).
 */
export const reservedTopicPrefix = 'system:';

export function topicAllowed(topic: string, tenant: string, rootTenant: string): boolean {
  return tenant === rootTenant || !topic.startsWith(reservedTopicPrefix);
}
