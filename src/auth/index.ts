/** Security: login, tokens, policies, tenants, audit. See auth.ts for createAuth. */
export { createAuth, type Auth, type AuthOptions } from './auth.js';
export type { Principal } from './principal.js';
export { operations, validatePolicy, policyProblems, adminPolicyName, type Operation } from './policies.js';
export { usersPath, policiesPath } from './users.js';
export { prepareUserForStore, redactUser, passwordHashField } from '../resources/user.js';
export { tenantsPath, type TenantTree } from './tenants.js';
export { auditTopic, auditToBus, type AuditEvent, type AuditSink } from './audit.js';
export type { TokenReply } from './tokens.js';
export { clientAddress } from './client.js';
