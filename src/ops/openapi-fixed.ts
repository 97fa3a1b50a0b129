/**
 * The fixed routes of the OpenAPI document: login, token refresh, secret-store operations,
 * topics, exporter operations, fleet, probes, metrics and the document itself.
 */
import {
  bodyOk,
  countOrNames,
  dryRunReply,
  list,
  locationHeader,
  objectBody,
  optionsOp,
  params,
  readErrors,
  responses,
  templateParams,
  writeErrors,
  type Obj,
} from './openapi-parts.js';

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

export function fixedPaths(): Obj {
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
        parameters: params(['fields', 'where', 'match-path', 'content', 'site', 'with-defaults', 'watch']),
        responses: responses({ 200: bodyOk(list({ $ref: '#/components/schemas/x-object' })) }, [400, 401, 406]),
      },
      ...opt(['GET', 'OPTIONS']),
    },
    '/v1/state/volga/topics': {
      get: {
        tags: ['topics'],
        summary: 'Topics of the message bus',
        parameters: params(['fields', 'where', 'keys', 'count', 'site']),
        responses: responses({ 200: bodyOk({ oneOf: [list(topicInfo), countOrNames] }) }, [400, 401, 403, 406]),
      },
      ...opt(['GET', 'OPTIONS']),
    },
    '/v1/state/volga/topics/{topic}': {
      parameters: templateParams('{topic}'),
      get: {
        tags: ['topics'],
        summary: 'One topic: length and last entry',
        parameters: params(['fields', 'site']),
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
        parameters: [
          {
            name: 'x-edgeplane-site-key',
            in: 'header',
            required: true,
            description: "The site's X25519 public key (base64url, 32 bytes): secrets are sealed for it",
            schema: { type: 'string', pattern: '^[A-Za-z0-9_-]{43}$' },
          },
        ],
        responses: responses(
          {
            200: { description: 'text/event-stream', content: { 'text/event-stream': { schema: { type: 'string' } } } },
          },
          [400, 401, 403, 404],
        ),
      },
    },
    '/v1/fleet/sites/{name}/ack': {
      parameters: templateParams('{name}'),
      post: {
        tags: ['fleet'],
        summary: 'An edge site reports the change version it applied (?version=, or the body)',
        security: [{ siteToken: [] }],
        parameters: [
          {
            name: 'version',
            in: 'query',
            required: false,
            description: 'The version applied (a change-log version, <ms>-<seq>); without it, the body carries it',
            schema: { type: 'string', pattern: '^[0-9]+-[0-9]+$' },
          },
        ],
        requestBody: {
          required: false,
          content: objectBody({ type: 'object', properties: { version: { type: 'string' } }, required: ['version'] }),
        },
        responses: responses({ 204: 'Recorded' }, [400, 401, 403, 404]),
      },
    },
    '/v1/fleet/sites/{name}/report': {
      parameters: templateParams('{name}'),
      post: {
        tags: ['fleet'],
        summary:
          "An edge site reports its state (kept as the site's last report, answered to site= reads when it is not connected)",
        security: [{ siteToken: [] }],
        requestBody: {
          required: true,
          content: objectBody({
            type: 'object',
            properties: { tenants: { type: 'object', additionalProperties: { type: 'array' } } },
            required: ['tenants'],
          }),
        },
        responses: responses({ 204: 'Stored' }, [400, 401, 403, 404, 413]),
      },
    },
    '/v1/fleet/sites/{name}/answer': {
      parameters: templateParams('{name}'),
      post: {
        tags: ['fleet'],
        summary: 'An edge site answers a site= read sent down its sync stream (event: request)',
        security: [{ siteToken: [] }],
        requestBody: {
          required: true,
          content: objectBody({
            type: 'object',
            properties: { id: { type: 'string' }, status: { type: 'integer' }, body: {} },
            required: ['id', 'status'],
          }),
        },
        responses: responses({ 204: 'Handed to the process that asked' }, [400, 401, 403, 404, 413]),
      },
    },
    '/v1/state/volga/webhooks/{name}/history': {
      parameters: templateParams('{name}'),
      get: {
        tags: ['webhook'],
        summary: 'The last 15 minutes of the exporter: delivered-counter samples every 5 s and recent errors',
        parameters: params(['site']),
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
        parameters: params(['site']),
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
    '/v1/state/config-revisions': {
      get: {
        tags: ['config'],
        summary:
          'The configuration history: one revision per committed transaction, newest first (the reader’s tenant view)',
        parameters: params(['count', 'where', 'fields']),
        responses: responses({ 200: bodyOk(list(revisionSchema(false))) }, [400, 401, 403]),
      },
      ...opt(['GET', 'OPTIONS']),
    },
    '/v1/state/config-revisions/{revision}': {
      parameters: templateParams('{revision}'),
      get: {
        tags: ['config'],
        summary: 'One revision with each object before and after (secret values redacted)',
        responses: responses({ 200: bodyOk(revisionSchema(true)) }, [400, 401, 403, 404]),
      },
      ...opt(['GET', 'OPTIONS']),
    },
    '/v1/config/rollback': {
      post: {
        tags: ['config'],
        summary: 'Restore every object changed after a revision to its content at that revision, as one transaction',
        parameters: params(['dry-run', 'validate']),
        requestBody: {
          required: true,
          content: objectBody({
            type: 'object',
            properties: { to: { type: ['integer', 'string'], description: 'a revision number' } },
            required: ['to'],
            additionalProperties: false,
          }),
        },
        responses: responses(
          {
            200: bodyOk(
              {
                type: 'object',
                properties: { revision: { type: 'integer' }, 'impacted-resources': list({ type: 'object' }) },
              },
              'the new revision (dry-run: what would change)',
            ),
            204: 'validate: the rollback would be accepted',
          },
          [400, 401, 403, 404, 409, 415, 503],
        ),
      },
      ...opt(['POST', 'OPTIONS']),
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

/** A revision of the configuration history (api/revisions.ts); `detail`: with before and after. */
function revisionSchema(detail: boolean): Obj {
  const change: Obj = {
    type: 'object',
    properties: {
      'x-path': { type: 'string' },
      'x-operation': { enum: ['create', 'replace', 'delete'] },
      ...(detail ? { before: { type: 'object' }, after: { type: 'object' } } : {}),
    },
    required: ['x-path', 'x-operation'],
  };
  return {
    type: 'object',
    properties: {
      revision: { type: 'integer' },
      time: { type: 'string', format: 'date-time' },
      user: { type: 'string' },
      tenant: { type: 'string' },
      changes: list(change),
    },
    required: ['revision', 'time', 'user', 'tenant', 'changes'],
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
