/**
 * A webhook exporter (`volga/webhooks/<name>`). Compiled once per written revision (spec.ts):
 * the write-time checks use the compiled form and the supervisor runs it (compiled.ts). Its
 * state is the exporter's (status, counters, per-topic lag): open-ended for `fields`.
 */
import { ApiError } from '../../lib/errors.js';
import { isObject } from '../../lib/json.js';
import { auditTrailTopic, reservedTopicPrefix, topicAllowed } from '../../bus/topics.js';
import { webhookSchema } from '../schemas.js';
import { resource, type ResourceModule } from '../module.js';
import { collectProblems } from '../problems.js';
import { checkWebhook } from './check.js';
import { webhookStateMembers } from './state-members.js';
import { keepSpec } from './compiled.js';
import { compileSpec, type ExporterSpec } from './spec.js';

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

export const webhook: ResourceModule = resource({
  id: 'webhook',
  segments: ['volga', 'webhooks'],
  shape: 'list',
  schema: webhookSchema,
  ordered: new Set(['headers']),
  needsUnsealed: true,
  listedWhileSealed: true,
  compile(obj, ctx) {
    if (ctx.rootTenant === undefined) return undefined;
    try {
      return compileSpec(ctx.tenant, obj, ctx.rootTenant);
    } catch {
      return undefined;
    }
  },
  keep: (key, etag, compiled) => keepSpec(key, etag, compiled as ExporterSpec),
  check: (obj, xPath, _ctx, compiled) => checkWebhook(obj, xPath, compiled as ExporterSpec | undefined),
  async checkInTenant(_before, after, _name, ctx) {
    const out: ApiError[] = [];
    const named = [
      ...(Array.isArray(after.topics) ? after.topics : []),
      ...(typeof after.topic === 'string' ? [after.topic] : []),
    ];
    for (const topic of named) {
      if (typeof topic === 'string' && !topicAllowed(topic, ctx.tenant, ctx.rootTenant)) {
        out.push(
          new ApiError(
            'forbidden',
            `Cannot subscribe to ${topic}: ${reservedTopicPrefix} topics carry every tenant's events and are read by the root tenant only`,
            { code: 'reserved-topic', path: 'topics' },
          ),
        );
      }
    }
    const dlt = after['dead-letter-topic'];
    if (dlt === auditTrailTopic)
      out.push(
        new ApiError('forbidden', `Cannot use ${dlt} as dead-letter-topic: the server alone writes the audit trail`, {
          code: 'reserved-topic',
          path: 'dead-letter-topic',
        }),
      );
    else if (typeof dlt === 'string' && !topicAllowed(dlt, ctx.tenant, ctx.rootTenant))
      out.push(
        new ApiError(
          'forbidden',
          `Cannot use ${dlt} as dead-letter-topic: ${reservedTopicPrefix} topics are written by the root tenant only`,
          { code: 'reserved-topic', path: 'dead-letter-topic' },
        ),
      );
    if (Array.isArray(after.variables)) {
      for (const [i, v] of after.variables.entries()) {
        const src = isObject(v) ? v['value-from-vault-secret'] : undefined;
        if (!isObject(src) || typeof src.vault !== 'string') continue;
        const from = typeof src['from-tenant'] === 'string' ? src['from-tenant'] : undefined;
        const vault = src.vault;
        out.push(
          ...(await collectProblems(() =>
            ctx.checkVaultReadable(from, vault, `variables[${i}]/value-from-vault-secret`),
          )),
        );
      }
    }
    return out;
  },
  dependsOnIds: ['vault', 'secret', 'deployment'],
  dependsOn(obj) {
    const out: string[] = [];
    for (const v of Array.isArray(obj.variables) ? obj.variables : []) {
      const src = isObject(v) ? v['value-from-vault-secret'] : undefined;
      if (isObject(src) && typeof src.vault === 'string' && src['from-tenant'] === undefined)
        out.push(`vault:${src.vault}`, `secret:${src.vault}/${String(src.secret)}`);
    }
    const placement = isObject(obj['site-placement']) ? obj['site-placement'] : {};
    for (const d of strings(placement['application-deployments'])) out.push(`deployment:${d}`);
    return out;
  },
  async derivedState(value, ctx) {
    if (typeof value.name !== 'string') return {};
    return (await ctx.exporterState(value.name)) ?? { status: 'starting' };
  },
  stateMembers: webhookStateMembers,
});
