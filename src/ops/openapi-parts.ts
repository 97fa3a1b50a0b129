/** Building blocks of the OpenAPI document (ops/openapi.ts): parameters, bodies, responses. */
import type { ResourceDef } from '../model/resources.js';
import { TOPIC_PATTERN, NAME_PATTERN } from '../resources/schemas.js';
import type { QueryParam } from '../query/params.js';

export type Obj = Record<string, unknown>;

export const openApiPaths = ['/v1/openapi.json', '/v1/openapi.yaml'] as const;

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

export const params = (names: readonly QueryParam[]): Obj[] =>
  names.map((n) => ({ name: n, in: 'query', required: false, allowEmptyValue: true, ...paramDefs[n] }));

const pathParam = (name: string, pattern: string): Obj => ({
  name,
  in: 'path',
  required: true,
  schema: { type: 'string', pattern },
});

const errorRef = { $ref: '#/components/responses/Error' };
export const statusText: Record<number, string> = {
  200: 'OK',
  201: 'Created',
  204: 'No content',
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

export const objectBody = (schema: Obj): Obj => ({
  'application/json': { schema },
  'application/yaml': { schema },
});

export const bodyOk = (schema: Obj, description = 'OK'): Obj => ({ description, content: objectBody(schema) });

export function responses(ok: Record<number, Obj | string>, errors: readonly number[]): Obj {
  const out: Obj = {};
  for (const [code, r] of Object.entries(ok)) out[code] = typeof r === 'string' ? { description: r } : r;
  for (const code of errors) out[String(code)] = { ...errorRef, description: statusText[code] };
  return out;
}

export const readErrors = [400, 401, 403, 404, 406];
export const writeErrors = [400, 401, 403, 404, 406, 409, 412, 413, 415];

export const ref = (def: ResourceDef): Obj => ({ $ref: `#/components/schemas/${def.id}` });
export const list = (schema: Obj): Obj => ({ type: 'array', items: schema });
export const countOrNames: Obj = {
  oneOf: [
    { type: 'object', properties: { count: { type: 'integer' } }, required: ['count'] },
    { type: 'array', items: { type: ['string', 'null'] } },
  ],
};
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

export const dryRunReply: Obj = {
  type: 'object',
  properties: { 'impacted-resources': { type: 'array', items: { type: 'object' } } },
};
export const patchBody: Obj = {
  required: true,
  content: {
    'application/json': { schema: { type: 'object', description: 'JSON merge patch' } },
    'application/yaml': { schema: { type: 'object', description: 'merge patch in YAML' } },
    'application/json-patch+json': { schema: { $ref: '#/components/schemas/json-patch' } },
    'application/json-patch+yaml': { schema: { $ref: '#/components/schemas/json-patch' } },
  },
};
export const etagHeader = { ETag: { schema: { type: 'string' } } };
export const locationHeader = { Location: { schema: { type: 'string' } } };

export function optionsOp(allow: readonly string[]): Obj {
  return {
    summary: `Allowed methods (${allow.join(', ')})`,
    responses: { 204: { description: 'Allow lists the methods', headers: { Allow: { schema: { type: 'string' } } } } },
  };
}

/** The path parameters of a template (`{vault}`, `{name}`). */
export function templateParams(template: string): Obj[] {
  return [...template.matchAll(/\{([^}]+)\}/g)].map((m) =>
    pathParam(m[1] as string, m[1] === 'topic' ? TOPIC_PATTERN : NAME_PATTERN),
  );
}
