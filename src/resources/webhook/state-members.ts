/**
 * The members a webhook exporter's state adds to its configuration (CONTRACT §3, §11, §12): what
 * `fields` on `/v1/state/.../exporters` may name, and what the OpenAPI document shows. Written
 * by exporter/state.ts (one site's exporter) and fleet/control/exporter-view.ts (`sites`, the
 * fleet's view at a control plane).
 */
import type { Schema } from '../schemas.js';

const time: Schema = { type: 'string', format: 'date-time' };
const count: Schema = { type: 'integer', minimum: 0 };
const status: Schema = { enum: ['starting', 'ready', 'retrying', 'paused', 'error', 'stopped'] };

const siteRow: Schema = {
  type: 'object',
  properties: {
    site: { type: 'string' },
    status,
    delivered: count,
    dropped: count,
    ignored: count,
    filtered: count,
    'failed-attempts': count,
    lag: count,
    'last-error': { type: 'string' },
    'last-error-time': time,
    'reported-at': time,
    connection: { enum: ['connected', 'disconnected'] },
  },
};

export const webhookStateMembers: Readonly<Record<string, Schema>> = {
  /** The site whose process wrote this state (exporter/runtime.ts). */
  site: { type: 'string' },
  status,
  'start-time': time,
  'consumed-topics': { type: 'array', items: { type: 'string' } },
  'last-error': { type: 'string' },
  'last-error-time': time,
  delivered: count,
  dropped: count,
  ignored: count,
  filtered: count,
  'failed-attempts': count,
  'in-flight': count,
  'in-flight-limit': count,
  'next-attempt-time': time,
  'failing-since': time,
  'topic-lag': {
    type: 'array',
    items: { type: 'object', properties: { topic: { type: 'string' }, lag: count } },
  },
  sites: { type: 'array', items: siteRow },
};
