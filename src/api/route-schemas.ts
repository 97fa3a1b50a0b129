/**
 * The schemas and parameters the route table (route-table.ts) declares its routes with, in
 * OpenAPI 3.1 form (JSON Schema draft 2020-12): query parameters, bodies, replies.
 */
import { TOPIC_PATTERN, NAME_PATTERN } from '../resources/schemas.js';
import type { QueryParam } from '../query/params.js';

export type Obj = Record<string, unknown>;

const paramDefs: Record<QueryParam, { schema: Obj; description: string }> = {
  fields: { schema: { type: 'string' }, description: 'Fields to return, e.g. `name,labels/zone` (a selector).' },
  where: { schema: { type: 'string' }, description: 'Only objects matching this expression, e.g. `status = "ready"`.' },
  'match-path': { schema: { type: 'string' }, description: 'Only objects whose x-path matches this glob.' },
  'with-defaults': {
    schema: { enum: ['', 'true', 'false', 'report-all', 'trim', 'explicit'] },
    description: 'Show default values: `report-all` (or no value, `true`), `trim`, `explicit`.',
  },
  content: {
    schema: { enum: ['config', 'nonconfig', 'all'] },
    description: 'State: configured fields, runtime fields or both.',
  },
  keys: { schema: { enum: ['', 'true', 'false'] }, description: 'Only the names of the list entries.' },
  watch: {
    schema: { enum: ['', 'true', 'false'] },
    description: 'Server-Sent Events: the current objects, `synced`, then each change (`event: change`).',
  },
  count: { schema: { enum: ['', 'true', 'false'] }, description: 'Only `{count}`.' },
  'send-etag': { schema: { enum: ['', 'true', 'false'] }, description: 'Add `x-etag` to each object.' },
  'include-tenant-config': {
    schema: { enum: ['', 'true', 'false'] },
    description: 'Include the configuration of subtenants (with `x-tenant`).',
  },
  'dry-run': {
    schema: { enum: ['', 'true', 'false'] },
    description: 'Check and report `impacted-resources` without writing (200).',
  },
  validate: { schema: { enum: ['', 'true', 'false'] }, description: 'Check only; 204 when the change is valid.' },
  'default-operation': {
    schema: { enum: ['create', 'replace', 'update', 'delete', 'remove'] },
    description: 'Operation of the objects without `x-operation` (default `replace`).',
  },
  site: {
    schema: { type: 'string' },
    description:
      "The site whose state is read: at a control plane any site (live when it is connected, else its last report with x-state-age); elsewhere only the process's own.",
  },
};

/** The OpenAPI parameter objects of query parameters. */
export const queryParamDocs = (names: readonly QueryParam[]): Obj[] =>
  names.map((n) => ({ name: n, in: 'query', required: false, allowEmptyValue: true, ...paramDefs[n] }));

/** The path parameters of a template (`{vault}`, `{name}`). */
export function templateParams(template: string): Obj[] {
  return [...template.matchAll(/\{([^}]+)\}/g)].map((m) => ({
    name: m[1] as string,
    in: 'path',
    required: true,
    schema: { type: 'string', pattern: m[1] === 'topic' ? TOPIC_PATTERN : m[1] === 'file' ? '^[^/]+$' : NAME_PATTERN },
  }));
}

export const statusText: Record<number, string> = {
  200: 'OK',
  201: 'Created',
  204: 'No content',
  301: 'Moved permanently (Location)',
  304: 'Not modified (If-None-Match)',
  400: 'Bad request: the body, a field or a query parameter is wrong (error-info names the rule, error-details where)',
  401: 'No or bad token',
  403: 'A policy denies it',
  404: 'No such object',
  405: 'Method not allowed (Allow lists the allowed ones)',
  406: 'Cannot answer in the encoding Accept asks for',
  409: 'Exists, or still in use',
  412: 'If-Match / If-None-Match not met',
  413: 'Body over MAX_BODY_BYTES',
  415: 'Body neither JSON nor YAML',
  429: 'Too many failed logins: wait',
  503: 'The secret store is sealed, or a dependency is unavailable',
};

/** A body in the API's two encodings. */
export const objectBody = (schema: Obj): Obj => ({
  'application/json': { schema },
  'application/yaml': { schema },
});

/** A read that may be watched: its objects, or with `watch` a stream of Server-Sent Events. */
export const watchable = (schema: Obj): Obj => ({
  ...objectBody(schema),
  'text/event-stream': { schema: { type: 'string' } },
});

export const bodyOk = (schema: Obj, description = 'OK'): Obj => ({ description, content: objectBody(schema) });
export const json = (schema: Obj): Obj => ({ 'application/json': { schema } });

export const ref = (name: string): Obj => ({ $ref: `#/components/schemas/${name}` });
export const list = (schema: Obj): Obj => ({ type: 'array', items: schema });

/** `validate` on a list GET: every stored object checked against today's schemas and checks. */
export const validateReply: Obj = {
  type: 'object',
  properties: {
    valid: { type: 'boolean' },
    problems: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          'x-path': { type: 'string' },
          'error-message': { type: 'string' },
          'error-info': { type: 'string' },
          'error-details': { type: 'object' },
        },
        required: ['x-path', 'error-message', 'error-info'],
      },
    },
  },
  required: ['valid', 'problems'],
};

/**
 * A list read: the objects, `{count}` (count), the names (keys) or, with validate, `{valid,
 * problems}`. An empty list is the first three.
 */
export const listReply = (item: Obj): Obj => ({
  anyOf: [
    list(item),
    validateReply,
    { type: 'object', properties: { count: { type: 'integer' } }, required: ['count'], additionalProperties: false },
    { type: 'array', items: { type: ['string', 'null'] } },
  ],
});

export const dryRunReply: Obj = {
  type: 'object',
  properties: { 'impacted-resources': { type: 'array', items: { type: 'object' } } },
  required: ['impacted-resources'],
};

export const patchBody: Obj = {
  required: true,
  content: {
    'application/json': { schema: { type: 'object', description: 'JSON merge patch' } },
    'application/yaml': { schema: { type: 'object', description: 'merge patch in YAML' } },
    'application/json-patch+json': { schema: ref('json-patch') },
    'application/json-patch+yaml': { schema: ref('json-patch') },
  },
};

export const etagHeader = { ETag: { schema: { type: 'string' } } };
export const locationHeader = { Location: { schema: { type: 'string' } } };
export const noStore = { 'Cache-Control': { schema: { const: 'no-store' } } };

export const tokenReply: Obj = {
  type: 'object',
  properties: {
    token: { type: 'string' },
    'expires-in': { type: 'integer' },
    expires: { type: 'string' },
    'creation-time': { type: 'string' },
  },
  required: ['token'],
};

export const topicInfo: Obj = {
  type: 'object',
  properties: {
    name: { type: 'string' },
    length: { type: 'integer' },
    'last-entry-id': { type: ['string', 'null'] },
    'last-entry': { type: ['object', 'null'] },
  },
  additionalProperties: false,
};

export const probeBody: Obj = {
  type: 'object',
  properties: {
    status: { enum: ['ok', 'ready', 'not-ready'] },
    'uptime-seconds': { type: 'integer' },
    /** While the process waits for Redis at start: why (the checks then are `process`, or `start-up`). */
    starting: { type: 'string' },
    checks: {
      type: 'array',
      items: {
        type: 'object',
        properties: { name: { type: 'string' }, ok: { type: 'boolean' }, reason: { type: 'string' } },
        required: ['name', 'ok'],
        additionalProperties: false,
      },
    },
  },
  required: ['status', 'checks'],
  additionalProperties: false,
};

export const historyReply: Obj = {
  type: 'object',
  properties: {
    name: { type: 'string' },
    'interval-seconds': { type: 'number' },
    samples: {
      type: 'array',
      items: {
        type: 'object',
        properties: { time: { type: 'string' }, delivered: { type: 'number' }, lag: { type: 'number' } },
      },
    },
    errors: {
      type: 'array',
      items: { type: 'object', properties: { time: { type: 'string' }, error: { type: 'string' } } },
    },
  },
};

export const attemptsReply: Obj = {
  type: 'array',
  items: {
    type: 'object',
    properties: {
      time: { type: 'string' },
      topic: { type: 'string' },
      seqno: { type: 'string' },
      attempt: { type: 'integer' },
      status: { type: 'integer' },
      error: { type: 'string' },
      'duration-ms': { type: 'number' },
      body: { type: 'string' },
    },
  },
};
