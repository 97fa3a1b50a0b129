/**
 * The OpenAPI 3.1 document of the v1 API (`GET /v1/openapi.json`, `/v1/openapi.yaml`, no
 * token), made from the resource table (model/resources.ts) and the JSON Schemas
 * (model/schemas.ts) the server validates with: every configuration list, item and singleton
 * under /v1/config and /v1/state gets its paths, methods, query parameters, body schema and
 * status codes from there; the few fixed routes (login, token refresh, unseal, topics,
 * restart, probes, metrics) are listed here. test/ops-openapi.test.ts checks the document
 * against the routes the server answers, both ways.
 */
import { Hono } from 'hono';
import { stringify } from 'yaml';
import type { AppEnv } from '../api/deps.js';
import { methodNotAllowed, options, searchParams } from '../api/http.js';
import { publicPaths } from '../auth/middleware.js';
import { passwordHashField } from '../auth/users.js';
import { resources, type ResourceDef } from '../model/resources.js';
import { TOPIC_PATTERN, NAME_PATTERN } from '../model/schemas.js';
import { parseQuery, type QueryParam } from '../query/params.js';
import { resourceTemplates } from './route-names.js';

type Obj = Record<string, unknown>;

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
  site: { schema: { type: 'string' }, description: 'The site whose state is read (this process serves its own).' },
};

const params = (names: readonly QueryParam[]): Obj[] =>
  names.map((n) => ({ name: n, in: 'query', required: false, allowEmptyValue: true, ...paramDefs[n] }));

const pathParam = (name: string, pattern: string): Obj => ({
  name,
  in: 'path',
  required: true,
  schema: { type: 'string', pattern },
});

const errorRef = { $ref: '#/components/responses/Error' };
const statusText: Record<number, string> = {
  200: 'OK',
  201: 'Created',
  204: 'No content',
  304: 'Not modified (If-None-Match)',
  400: 'Bad request: the body, a field or a query parameter is wrong (named in error-info)',
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

const objectBody = (schema: Obj): Obj => ({
  'application/json': { schema },
  'application/yaml': { schema },
});

const bodyOk = (schema: Obj, description = 'OK'): Obj => ({ description, content: objectBody(schema) });

function responses(ok: Record<number, Obj | string>, errors: readonly number[]): Obj {
  const out: Obj = {};
  for (const [code, r] of Object.entries(ok)) out[code] = typeof r === 'string' ? { description: r } : r;
  for (const code of errors) out[String(code)] = { ...errorRef, description: statusText[code] };
  return out;
}

const readErrors = [400, 401, 403, 404, 406];
const writeErrors = [400, 401, 403, 404, 406, 409, 412, 413, 415];

const ref = (def: ResourceDef): Obj => ({ $ref: `#/components/schemas/${def.id}` });
const list = (schema: Obj): Obj => ({ type: 'array', items: schema });
const countOrNames: Obj = {
  oneOf: [
    { type: 'object', properties: { count: { type: 'integer' } }, required: ['count'] },
    { type: 'array', items: { type: ['string', 'null'] } },
  ],
};
const dryRunReply: Obj = {
  type: 'object',
  properties: { 'impacted-resources': { type: 'array', items: { type: 'object' } } },
};
const patchBody: Obj = {
  required: true,
  content: {
    'application/json': { schema: { type: 'object', description: 'JSON merge patch' } },
    'application/yaml': { schema: { type: 'object', description: 'merge patch in YAML' } },
    'application/json-patch+json': { schema: { $ref: '#/components/schemas/json-patch' } },
    'application/json-patch+yaml': { schema: { $ref: '#/components/schemas/json-patch' } },
  },
};
const etagHeader = { ETag: { schema: { type: 'string' } } };
const locationHeader = { Location: { schema: { type: 'string' } } };

function optionsOp(allow: readonly string[]): Obj {
  return {
    summary: `Allowed methods (${allow.join(', ')})`,
    responses: { 204: { description: 'Allow lists the methods', headers: { Allow: { schema: { type: 'string' } } } } },
  };
}

/** The path parameters of a template (`{vault}`, `{name}`). */
function templateParams(template: string): Obj[] {
  return [...template.matchAll(/\{([^}]+)\}/g)].map((m) =>
    pathParam(m[1] as string, m[1] === 'topic' ? TOPIC_PATTERN : NAME_PATTERN),
  );
}

function configPaths(def: ResourceDef, paths: Obj): void {
  const t = resourceTemplates('/v1/config', def);
  const tag = [def.id];
  const sealed = def.needsUnsealed ? [503] : [];
  const writeParams = params(['dry-run', 'validate']);
  const writeOk = (codes: Record<number, Obj | string>) => ({
    ...codes,
    200: bodyOk(dryRunReply, 'dry-run: what would change'),
  });
  const one = {
    get: {
      tags: tag,
      summary: `Read the ${def.id}`,
      parameters: params(['fields', 'with-defaults', 'watch']),
      responses: responses({ 200: { ...bodyOk(ref(def)), headers: etagHeader }, 304: statusText[304] as string }, [
        ...readErrors,
        412,
        ...sealed,
      ]),
    },
    put: {
      tags: tag,
      summary: `Create or replace the ${def.id}`,
      parameters: writeParams,
      requestBody: { required: true, content: objectBody(ref(def)) },
      responses: responses(
        writeOk({
          201: { description: 'Created', headers: { ...etagHeader, ...locationHeader } },
          204: { description: 'Replaced (validate: valid)', headers: etagHeader },
        }),
        [...writeErrors, ...sealed],
      ),
    },
    patch: {
      tags: tag,
      summary: `Patch the ${def.id} (merge patch or JSON Patch)`,
      parameters: writeParams,
      requestBody: patchBody,
      responses: responses(writeOk({ 204: { description: 'Patched', headers: etagHeader } }), [
        ...writeErrors,
        ...sealed,
      ]),
    },
    delete: {
      tags: tag,
      summary: `Delete the ${def.id}`,
      parameters: writeParams,
      responses: responses(writeOk({ 204: 'Deleted' }), [...writeErrors, ...sealed]),
    },
    options: optionsOp(['GET', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']),
  };
  if (!t.item) {
    paths[t.base] = { parameters: templateParams(t.base), ...one };
    return;
  }
  paths[t.base] = {
    parameters: templateParams(t.base),
    get: {
      tags: tag,
      summary: `List ${def.id} objects`,
      parameters: params(['fields', 'where', 'keys', 'count', 'with-defaults', 'watch']),
      responses: responses({ 200: bodyOk({ oneOf: [list(ref(def)), countOrNames] }) }, [...readErrors, ...sealed]),
    },
    post: {
      tags: tag,
      summary: `Create a ${def.id} (its name in the body)`,
      parameters: writeParams,
      requestBody: { required: true, content: objectBody(ref(def)) },
      responses: responses(
        writeOk({
          201: { description: 'Created', headers: { ...etagHeader, ...locationHeader } },
          204: 'validate: valid',
        }),
        [...writeErrors, ...sealed],
      ),
    },
    options: optionsOp(['GET', 'POST', 'OPTIONS']),
  };
  paths[t.item] = { parameters: templateParams(t.item), ...one };
}

function statePaths(def: ResourceDef, paths: Obj): void {
  const t = resourceTemplates('/v1/state', def);
  const tag = [def.id];
  const sealed = def.needsUnsealed ? [503] : [];
  const state: Obj = { allOf: [ref(def)], description: 'The applied configuration and runtime fields' };
  const item = {
    get: {
      tags: tag,
      summary: `Read the state of the ${def.id}`,
      parameters: params(['fields', 'where', 'content', 'site', 'with-defaults', 'watch']),
      responses: responses({ 200: bodyOk(def.id === 'secret' ? secretState : { type: 'object' }) }, [
        ...readErrors,
        ...sealed,
      ]),
    },
    options: optionsOp(['GET', 'OPTIONS']),
  };
  if (!t.item) {
    paths[t.base] = { parameters: templateParams(t.base), ...item };
    return;
  }
  paths[t.base] = {
    parameters: templateParams(t.base),
    get: {
      tags: tag,
      summary: `State of every ${def.id}`,
      parameters: params(['fields', 'where', 'keys', 'count', 'content', 'site', 'with-defaults', 'watch']),
      responses: responses({ 200: bodyOk({ oneOf: [list(state), countOrNames] }) }, [...readErrors, ...sealed]),
    },
    options: optionsOp(['GET', 'OPTIONS']),
  };
  paths[t.item] = { parameters: templateParams(t.item), ...item };
}

const secretState: Obj = {
  type: 'object',
  properties: { name: { type: 'string' }, dict: { type: 'object', additionalProperties: { type: 'string' } } },
};

const token: Obj = {
  type: 'object',
  properties: { token: { type: 'string' }, 'expires-in': { type: 'integer' } },
  required: ['token'],
};
const topicInfo: Obj = {
  type: 'object',
  properties: {
    name: { type: 'string' },
    length: { type: 'integer' },
    'last-entry-id': { type: ['string', 'null'] },
    'last-entry': { type: ['object', 'null'] },
  },
};
const probeBody: Obj = {
  type: 'object',
  properties: {
    status: { type: 'string' },
    checks: {
      type: 'array',
      items: {
        type: 'object',
        properties: { name: { type: 'string' }, ok: { type: 'boolean' }, reason: { type: 'string' } },
        required: ['name', 'ok'],
      },
    },
  },
};
const json = (schema: Obj): Obj => ({ 'application/json': { schema } });

function fixedPaths(): Obj {
  const opt = (allow: readonly string[]) => ({ options: optionsOp(allow) });
  return {
    '/healthz': {
      get: {
        tags: ['ops'],
        summary: 'Liveness',
        responses: { 200: { description: 'Alive', content: json(probeBody) } },
      },
      ...opt(['GET', 'OPTIONS']),
    },
    '/readyz': {
      get: {
        tags: ['ops'],
        summary: 'Readiness: every check named',
        responses: {
          200: { description: 'Ready', content: json(probeBody) },
          503: { description: 'Not ready (the failing checks say why)', content: json(probeBody) },
        },
      },
      ...opt(['GET', 'OPTIONS']),
    },
    '/metrics': {
      get: {
        tags: ['ops'],
        summary: 'Prometheus metrics (Bearer METRICS_TOKEN when it is set)',
        responses: responses(
          { 200: { description: 'Text format', content: { 'text/plain': { schema: { type: 'string' } } } } },
          [401],
        ),
      },
      ...opt(['GET', 'OPTIONS']),
    },
    '/v1/openapi.json': {
      get: {
        tags: ['ops'],
        summary: 'This document',
        responses: { 200: { description: 'OpenAPI 3.1', content: json({ type: 'object' }) } },
      },
      ...opt(['GET', 'OPTIONS']),
    },
    '/v1/openapi.yaml': {
      get: {
        tags: ['ops'],
        summary: 'This document in YAML',
        responses: {
          200: { description: 'OpenAPI 3.1', content: { 'application/yaml': { schema: { type: 'string' } } } },
        },
      },
      ...opt(['GET', 'OPTIONS']),
    },
    '/v1/login': {
      post: {
        tags: ['auth'],
        summary: 'Log in: a Bearer token',
        requestBody: {
          required: true,
          content: objectBody({
            type: 'object',
            properties: { username: { type: 'string' }, password: { type: 'string' } },
            required: ['username', 'password'],
          }),
        },
        responses: responses({ 200: bodyOk(token) }, [400, 401, 406, 415, 429]),
      },
      ...opt(['POST', 'OPTIONS']),
    },
    '/v1/state/strongbox/token/refresh': {
      post: {
        tags: ['auth'],
        summary: 'A new token for this one (which ends)',
        responses: responses({ 200: bodyOk(token) }, [400, 401, 403, 406]),
      },
      ...opt(['POST', 'OPTIONS']),
    },
    '/v1/strongbox/init': {
      post: {
        tags: ['strongbox'],
        summary: 'Create the master key of an uninitialised secret store; the key is answered once',
        responses: responses(
          {
            200: bodyOk({ type: 'object', properties: { key: { type: 'string' } }, required: ['key'] }),
          },
          [400, 401, 403, 409],
        ),
      },
      ...opt(['POST', 'OPTIONS']),
    },
    '/v1/strongbox/unseal': {
      post: {
        tags: ['strongbox'],
        summary: 'Unseal the secret store with the master key',
        requestBody: {
          required: true,
          content: objectBody({ type: 'object', properties: { key: { type: 'string' } }, required: ['key'] }),
        },
        responses: responses({ 204: 'Unsealed' }, [400, 401, 403, 415]),
      },
      ...opt(['POST', 'OPTIONS']),
    },
    '/v1/config': {
      get: {
        tags: ['config'],
        summary: 'Every configuration object, each with x-path',
        parameters: params([
          'with-defaults',
          'send-etag',
          'include-tenant-config',
          'match-path',
          'fields',
          'where',
          'watch',
        ]),
        responses: responses({ 200: bodyOk(list({ $ref: '#/components/schemas/x-object' })) }, [400, 401, 406]),
      },
      patch: multiObjectWrite('Apply several objects in one transaction (all or nothing)'),
      post: multiObjectWrite('Apply several objects in one transaction (all or nothing)'),
      ...opt(['GET', 'POST', 'PATCH', 'OPTIONS']),
    },
    '/v1/state': {
      get: {
        tags: ['state'],
        summary: 'Every state object, each with x-path',
        parameters: params(['fields', 'where', 'match-path', 'content', 'with-defaults', 'watch']),
        responses: responses({ 200: bodyOk(list({ $ref: '#/components/schemas/x-object' })) }, [400, 401, 406]),
      },
      ...opt(['GET', 'OPTIONS']),
    },
    '/v1/state/volga/topics': {
      get: {
        tags: ['topics'],
        summary: 'Topics of the message bus',
        parameters: params(['fields', 'where', 'keys', 'count']),
        responses: responses({ 200: bodyOk({ oneOf: [list(topicInfo), countOrNames] }) }, [400, 401, 403, 406]),
      },
      ...opt(['GET', 'OPTIONS']),
    },
    '/v1/state/volga/topics/{topic}': {
      parameters: templateParams('{topic}'),
      get: {
        tags: ['topics'],
        summary: 'One topic: length and last entry',
        parameters: params(['fields']),
        responses: responses({ 200: bodyOk(topicInfo) }, readErrors),
      },
      ...opt(['GET', 'OPTIONS']),
    },
    '/v1/state/volga/topics/{topic}/produce': {
      parameters: templateParams('{topic}'),
      post: {
        tags: ['topics'],
        summary: 'Produce a message on the topic',
        requestBody: {
          required: true,
          content: objectBody({
            type: 'object',
            properties: { payload: {}, 'producer-name': { type: 'string' } },
            required: ['payload'],
            additionalProperties: false,
          }),
        },
        responses: responses(
          {
            201: { ...bodyOk({ type: 'object', properties: { seqno: { type: 'string' } } }), headers: locationHeader },
          },
          [400, 401, 403, 406, 413, 415],
        ),
      },
      ...opt(['POST', 'OPTIONS']),
    },
    '/v1/state/sites/{name}/issue-token': {
      parameters: templateParams('{name}'),
      post: {
        tags: ['fleet'],
        summary: "Issue the site's sync token (shown once; a new one revokes the previous one)",
        responses: responses(
          { 201: bodyOk({ type: 'object', properties: { token: { type: 'string' } }, required: ['token'] }) },
          [400, 401, 403, 404],
        ),
      },
      ...opt(['POST', 'OPTIONS']),
    },
    '/v1/fleet/sites/{name}/sync': {
      parameters: templateParams('{name}'),
      get: {
        tags: ['fleet'],
        summary:
          "An edge site's change stream (Server-Sent Events; Last-Event-ID resumes; reset + snapshot when history is gone)",
        security: [{ siteToken: [] }],
        responses: responses(
          {
            200: { description: 'text/event-stream', content: { 'text/event-stream': { schema: { type: 'string' } } } },
          },
          [401, 403, 404],
        ),
      },
    },
    '/v1/fleet/sites/{name}/ack': {
      parameters: templateParams('{name}'),
      post: {
        tags: ['fleet'],
        summary: 'An edge site reports the change version it applied',
        security: [{ siteToken: [] }],
        requestBody: {
          required: true,
          content: objectBody({ type: 'object', properties: { version: { type: 'string' } }, required: ['version'] }),
        },
        responses: responses({ 204: 'Recorded' }, [400, 401, 403, 404]),
      },
    },
    '/v1/state/volga/webhooks/{name}/history': {
      parameters: templateParams('{name}'),
      get: {
        tags: ['webhook'],
        summary: 'The last 15 minutes of the exporter: delivered-counter samples every 5 s and recent errors',
        responses: responses(
          {
            200: bodyOk({
              type: 'object',
              properties: {
                name: { type: 'string' },
                'interval-seconds': { type: 'number' },
                samples: {
                  type: 'array',
                  items: { type: 'object', properties: { time: { type: 'string' }, delivered: { type: 'number' } } },
                },
                errors: {
                  type: 'array',
                  items: { type: 'object', properties: { time: { type: 'string' }, error: { type: 'string' } } },
                },
              },
            }),
          },
          [400, 401, 403, 404],
        ),
      },
      ...opt(['GET', 'OPTIONS']),
    },
    '/v1/state/volga/webhooks/{name}/rewind': {
      parameters: templateParams('{name}'),
      post: {
        tags: ['webhook'],
        summary: "Move the exporter's position on every topic it consumes",
        requestBody: {
          required: true,
          content: objectBody({
            type: 'object',
            properties: {
              to: { type: 'string', description: '`beginning`, `end`, a seqno (`1732230000000-0`) or an ISO time' },
            },
            required: ['to'],
          }),
        },
        responses: responses({ 204: 'Moved' }, [400, 401, 403, 404, 415, 503]),
      },
      ...opt(['POST', 'OPTIONS']),
    },
    '/v1/state/volga/webhooks/{name}/attempts': {
      parameters: templateParams('{name}'),
      get: {
        tags: ['webhook'],
        summary: 'The last 100 POST attempts, newest first',
        responses: responses(
          {
            200: bodyOk({
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
            }),
          },
          [400, 401, 403, 404, 503],
        ),
      },
      ...opt(['GET', 'OPTIONS']),
    },
    '/v1/state/volga/webhooks/{name}/restart': {
      parameters: templateParams('{name}'),
      post: {
        tags: ['webhook'],
        summary: 'Restart the webhook exporter',
        responses: responses({ 204: 'Restarted' }, [400, 401, 403, 404, 503]),
      },
      ...opt(['POST', 'OPTIONS']),
    },
  };
}

function multiObjectWrite(summary: string): Obj {
  return {
    tags: ['config'],
    summary,
    parameters: params(['dry-run', 'validate', 'default-operation']),
    requestBody: {
      required: true,
      content: objectBody({
        oneOf: [list({ $ref: '#/components/schemas/x-object' }), { $ref: '#/components/schemas/x-object' }],
      }),
    },
    responses: responses(
      { 204: 'Applied (validate: valid)', 200: bodyOk(dryRunReply, 'dry-run: what would change') },
      writeErrors,
    ),
  };
}

/**
 * A resource's schema as clients see it: a user's stored password hash is the server's own
 * (never shown, refused from clients), so it is left out, and the password is write-only.
 */
function publicSchema(def: ResourceDef): Obj {
  if (def.id !== 'user') return def.schema;
  const props = { ...(def.schema.properties as Obj) };
  delete props[passwordHashField];
  props.password = { ...(props.password as Obj), writeOnly: true };
  return { ...def.schema, properties: props };
}

function build(): Obj {
  const paths: Obj = fixedPaths();
  for (const def of resources) {
    configPaths(def, paths);
    statePaths(def, paths);
  }
  // Routes that need no token say so; every other one needs a Bearer token.
  for (const [path, item] of Object.entries(paths))
    if (publicPaths.has(path))
      for (const op of Object.values(item as Obj))
        if (op && typeof op === 'object' && 'responses' in op) (op as Obj).security = [];
  const schemas: Obj = Object.fromEntries(resources.map((d) => [d.id, publicSchema(d)]));
  schemas['x-object'] = {
    type: 'object',
    description: 'A configuration object with its address: x-path, and optionally x-operation, x-etag, x-tenant',
    properties: {
      'x-path': { type: 'string' },
      'x-operation': { enum: ['create', 'replace', 'update', 'delete', 'remove'] },
      'x-etag': { type: 'string' },
      'x-tenant': { type: 'string' },
    },
    required: ['x-path'],
  };
  schemas['json-patch'] = {
    type: 'array',
    items: {
      type: 'object',
      properties: {
        op: { enum: ['add', 'remove', 'replace', 'move', 'copy', 'test'] },
        path: { type: 'string' },
        from: { type: 'string' },
        value: {},
      },
      required: ['op', 'path'],
    },
  };
  schemas.errors = {
    type: 'object',
    properties: {
      errors: {
        type: 'array',
        items: {
          type: 'object',
          properties: { 'error-message': { type: 'string' }, 'error-info': { type: 'object' } },
          required: ['error-message'],
        },
      },
    },
    required: ['errors'],
  };
  return {
    openapi: '3.1.0',
    info: {
      title: 'edgeplane v1 API',
      version: '1',
      description: 'Configuration (/v1/config), state (/v1/state) and operations of an edgeplane site.',
    },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    security: [{ bearer: [] }],
    paths,
    components: {
      schemas,
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'POST /v1/login' },
        siteToken: { type: 'http', scheme: 'bearer', description: 'POST /v1/state/sites/{name}/issue-token' },
      },
      responses: {
        Error: {
          description: 'An error',
          content: objectBody({ $ref: '#/components/schemas/errors' }),
        },
      },
    },
  };
}

let cached: { doc: Obj; json: string; yaml: string } | undefined;

/** The document (built once: it depends only on the code). */
export function openApiDocument(): Obj {
  cached ??= (() => {
    const doc = build();
    return { doc, json: JSON.stringify(doc), yaml: stringify(doc, { aliasDuplicateObjects: false }) };
  })();
  return cached.doc;
}

export function openApiRoutes(): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const send = (text: string, type: string) =>
    new Response(text, { status: 200, headers: { 'content-type': type, 'cache-control': 'no-cache' } });
  app.get('/v1/openapi.json', (c) => {
    parseQuery(searchParams(c), []);
    openApiDocument();
    return send(cached!.json, 'application/json');
  });
  app.get('/v1/openapi.yaml', (c) => {
    parseQuery(searchParams(c), []);
    openApiDocument();
    return send(cached!.yaml, 'application/yaml');
  });
  for (const path of openApiPaths) {
    app.options(path, () => options(['GET', 'OPTIONS'], false));
    app.all(path, (c) => {
      throw methodNotAllowed(c.req.method, path, ['GET', 'OPTIONS']);
    });
  }
  return app;
}
