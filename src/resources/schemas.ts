/**
 * JSON Schemas of every configuration resource. Defaults written
 * here are what `with-defaults` reports. Semantic checks a schema cannot express (regexes,
 * templates, label expressions) live in each resource's `check` (resources/).
 */
import { durationPattern } from '../lib/duration.js';
import { pointerPattern } from '../lib/json-pointer.js';

/** Back-off of a failing webhook POST when the configuration does not say (the schema's defaults, and the compiled form's). */
export const retryDefaults = { 'retry-interval': '1s', 'max-retry-interval': '60s' } as const;

/** What `batch` sends at most when the configuration does not say (the schema's defaults, and the compiled form's). */
export const batchDefaults = { 'max-bytes': 1024 * 1024, 'max-wait': '1s' } as const;

export type Schema = { [key: string]: unknown };

const str = { type: 'string' } as const;
const strList = { type: 'array', items: str } as const;
export const NAME_PATTERN = '^[a-z0-9]([a-z0-9-]*[a-z0-9])?$';
export const TOPIC_PATTERN = '^[0-9A-Za-z+_=:@.-]+$';
const name = { type: 'string', pattern: NAME_PATTERN, maxLength: 253 } as const;
const topic = { type: 'string', pattern: TOPIC_PATTERN, maxLength: 255 } as const;
const duration = { type: 'string', pattern: durationPattern } as const;

const labels = { type: 'object', additionalProperties: str } as const;

function object(properties: Record<string, unknown>, required: string[] = []): Schema {
  return { type: 'object', properties, required, additionalProperties: false };
}

/**
 * A staged rollout of the object to the edge sites (CONTRACT §11; resources/rollout.ts checks
 * what a schema cannot, fleet/control/rollouts.ts runs it). Every resource that reaches sites
 * may carry one.
 */
export const rolloutSchema: Schema = {
  ...object(
    {
      waves: {
        type: 'array',
        minItems: 1,
        maxItems: 100,
        items: {
          type: 'object',
          properties: {
            'match-site-labels': { type: 'string', minLength: 1 },
            percent: { type: 'integer', minimum: 1, maximum: 100 },
          },
          additionalProperties: false,
          minProperties: 1,
          maxProperties: 1,
        },
      },
      wait: { ...duration, default: '0s' },
      'healthy-for': { ...duration, default: '30s' },
      'on-failure': { enum: ['pause', 'rollback'], default: 'pause' },
    },
    ['waves'],
  ),
};

/** What a state read adds to `rollout` at a control plane: the rollout's progress (fleet/control/rollouts.ts). */
export const rolloutProgressMembers = {
  revision: { type: 'integer', description: 'the configuration revision being rolled out' },
  wave: { type: 'integer', minimum: 1, description: 'the current wave (1 is the first)' },
  state: { enum: ['progressing', 'paused', 'done', 'rolled-back'] },
  'sites-updated': { type: 'integer', minimum: 0 },
  'sites-total': { type: 'integer', minimum: 0 },
  reason: { type: 'string' },
} as const;

/** An object with its optional rollout (every resource that reaches sites). */
function rolledOut(properties: Record<string, unknown>, required: string[] = []): Schema {
  return object({ ...properties, rollout: rolloutSchema }, required);
}

const onlyOne = (props: Record<string, unknown>): Schema => ({
  type: 'object',
  properties: props,
  additionalProperties: false,
  minProperties: 1,
  maxProperties: 1,
});

export const webhookSchema = rolledOut(
  {
    name,
    topic,
    topics: { type: 'array', items: topic, uniqueItems: true },
    'topic-patterns': strList,
    'site-placement': onlyOne({
      'all-sites': { const: true },
      sites: { type: 'array', items: name, minItems: 1 },
      'application-deployments': { type: 'array', items: name, minItems: 1 },
      'match-site-labels': { type: 'string', minLength: 1 },
    }),
    'start-position': { enum: ['end', 'beginning', 'unread'], default: 'end' },
    // Sets (stored in a canonical order): an entry twice is a 400, not a second, equal filter.
    'match-re': { ...strList, uniqueItems: true },
    'match-string': { ...strList, uniqueItems: true },
    'no-match-re': { ...strList, uniqueItems: true },
    'no-match-string': { ...strList, uniqueItems: true },
    url: { type: 'string', minLength: 1, maxLength: 8192 },
    'tls-verify': { type: 'boolean', default: true },
    'ca-cert': { type: 'string', pattern: '-----BEGIN CERTIFICATE-----' },
    'use-root-ca-certs': { type: 'boolean', default: true },
    'server-name-indication': { type: 'string', minLength: 1, maxLength: 253 },
    tries: { type: 'integer', minimum: 0, maximum: 4294967295, default: 0 },
    headers: {
      type: 'array',
      items: object({ name: { type: 'string', pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$" }, value: str }, [
        'name',
        'value',
      ]),
    },
    data: str,
    'data-format': { enum: ['string', 'json'], default: 'string' },
    variables: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          name: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$' },
          'value-from-vault-secret': object(
            { 'from-tenant': str, vault: name, secret: name, key: { type: 'string', minLength: 1 } },
            ['vault', 'secret', 'key'],
          ),
          'value-from-message': object({ 'json-pointer': { type: 'string', pattern: pointerPattern }, default: str }, [
            'json-pointer',
          ]),
        },
        required: ['name'],
        additionalProperties: false,
        minProperties: 2,
        maxProperties: 2,
      },
    },
    'max-in-flight': { anyOf: [{ type: 'integer', minimum: 1, maximum: 4096 }, { const: 'auto' }], default: 1 },
    'retry-interval': { ...duration, default: retryDefaults['retry-interval'] },
    'max-retry-interval': { ...duration, default: retryDefaults['max-retry-interval'] },
    // Delivery controls (exporter/README "Delivery controls").
    enabled: { type: 'boolean', default: true },
    'dead-letter-topic': topic,
    'retry-on': {
      type: 'array',
      items: {
        anyOf: [
          // Failures only: a 1xx is never a final answer and a 2xx is a success.
          { type: 'string', pattern: '^([3-5]xx|[3-5][0-9]{2}|connection)$' },
          { type: 'integer', minimum: 300, maximum: 599 },
        ],
      },
      uniqueItems: true,
    },
    signing: object({ vault: name, secret: name, key: { type: 'string', minLength: 1 } }, ['vault', 'secret', 'key']),
    // Delivery extensions (CONTRACT §12; README "Delivery extensions").
    'client-certificate': object(
      {
        vault: name,
        secret: name,
        'cert-key': { type: 'string', minLength: 1 },
        'key-key': { type: 'string', minLength: 1 },
      },
      ['vault', 'secret', 'cert-key', 'key-key'],
    ),
    'ordering-key': { type: 'string', minLength: 1, maxLength: 8192 },
    oauth2: object(
      {
        'token-url': { type: 'string', minLength: 1, maxLength: 8192 },
        'client-id': { type: 'string', minLength: 1 },
        'client-secret': object({ vault: name, secret: name, key: { type: 'string', minLength: 1 } }, [
          'vault',
          'secret',
          'key',
        ]),
        scope: str,
        audience: str,
      },
      ['token-url', 'client-id', 'client-secret'],
    ),
    'rate-limit': object(
      {
        'per-second': { type: 'number', exclusiveMinimum: 0, maximum: 1_000_000 },
        burst: { type: 'integer', minimum: 1, maximum: 1_000_000 },
      },
      ['per-second'],
    ),
    batch: object(
      {
        'max-messages': { type: 'integer', minimum: 1, maximum: 10_000 },
        'max-bytes': { type: 'integer', minimum: 1, maximum: 64 * 1024 * 1024, default: batchDefaults['max-bytes'] },
        'max-wait': { ...duration, default: batchDefaults['max-wait'] },
      },
      ['max-messages'],
    ),
  },
  ['name', 'site-placement', 'url', 'data'],
);

export const applicationSchema = rolledOut(
  {
    name,
    version: { type: 'string', minLength: 1, maxLength: 64 },
    description: str,
    services: {
      type: 'array',
      items: object(
        {
          name,
          image: { type: 'string', minLength: 1 },
          ports: { type: 'array', items: { type: 'integer', minimum: 1, maximum: 65535 } },
          env: { type: 'array', items: object({ name: { type: 'string', minLength: 1 }, value: str }, ['name']) },
        },
        ['name', 'image'],
      ),
    },
  },
  ['name'],
);

export const deploymentSchema = rolledOut(
  {
    name,
    'application-name': name,
    'application-version': { type: 'string', minLength: 1 },
    placement: object({ 'match-site-labels': { type: 'string', minLength: 1 } }),
  },
  ['name', 'application-name'],
);

const ipv4Cidr =
  '^((25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])\\.){3}(25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])/([0-9]|[12][0-9]|3[0-2])$';

export const siteSchema = rolledOut(
  {
    name,
    description: str,
    type: { type: 'string', pattern: NAME_PATTERN, default: 'edge' },
    labels,
    topology: object({ 'parent-site': name }),
    hosts: { type: 'array', items: object({ 'host-id': { type: 'string', minLength: 1 }, labels }, ['host-id']) },
    'management-ipv4-access-list': { type: 'array', items: { type: 'string', pattern: ipv4Cidr } },
  },
  ['name'],
);

const hostname = {
  type: 'string',
  pattern: '^([A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)(\\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*$',
  maxLength: 253,
} as const;

export const settingsSchema = rolledOut({ 'default-domain': hostname });

export const dnsZoneSchema = rolledOut({ name, domain: hostname }, ['name', 'domain']);

export const vaultSchema = rolledOut({ name, description: str }, ['name']);

export const secretSchema = rolledOut(
  {
    name,
    data: { type: 'object', propertyNames: { pattern: '^[A-Za-z0-9._-]+$' }, additionalProperties: str },
  },
  ['name'],
);

const operation = { enum: ['read', 'create', 'update', 'delete', 'execute'] } as const;

export const userSchema = rolledOut(
  {
    name,
    password: { type: 'string', minLength: 8, maxLength: 1024 },
    'password-hash': str,
    policies: { type: 'array', items: name },
  },
  ['name'],
);

export const policySchema = rolledOut(
  {
    name,
    rules: {
      type: 'array',
      items: object(
        {
          path: { type: 'string', pattern: '^/' },
          operations: { type: 'array', items: operation, minItems: 1 },
          effect: { enum: ['allow', 'deny'] },
        },
        ['path', 'operations', 'effect'],
      ),
    },
  },
  ['name', 'rules'],
);

export const tenantSchema = rolledOut(
  {
    name,
    description: str,
    'shared-vaults': { type: 'array', items: name },
  },
  ['name'],
);
