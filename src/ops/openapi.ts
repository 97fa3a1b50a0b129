/**
 * The OpenAPI 3.1 document of the v1 API (`GET /v1/openapi.json`, `/v1/openapi.yaml`, no
 * token), made from the resource registry (resources/) and the JSON Schemas
 * (resources/schemas.ts) the server validates with: every configuration list, item and singleton
 * under /v1/config and /v1/state gets its paths, methods, query parameters, body schema and
 * status codes from there; the few fixed routes (login, token refresh, unseal, topics,
 * restart, probes, metrics) are listed here. test/ops/openapi.test.ts checks the document
 * against the routes the server answers, both ways.
 */
import { Hono } from 'hono';
import { stringify } from 'yaml';
import type { AppEnv } from '../api/deps.js';
import { methodNotAllowed, options, searchParams } from '../api/http.js';
import { publicPaths } from '../api/auth-middleware.js';
import { resources, type ResourceDef } from '../model/resources.js';
import { parseQuery } from '../query/params.js';
import { resourceTemplates } from './route-names.js';
import {
  bodyOk,
  countOrNames,
  validateReply,
  dryRunReply,
  etagHeader,
  list,
  locationHeader,
  objectBody,
  openApiPaths,
  optionsOp,
  params,
  patchBody,
  readErrors,
  ref,
  responses,
  statusText,
  templateParams,
  writeErrors,
  type Obj,
} from './openapi-parts.js';
import { fixedPaths } from './openapi-fixed.js';
import { infoCodes } from '../lib/errors.js';

export { openApiPaths } from './openapi-parts.js';

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
      parameters: params(['fields', 'where', 'keys', 'count', 'with-defaults', 'watch', 'validate']),
      responses: responses(
        {
          200: { ...bodyOk({ oneOf: [list(ref(def)), countOrNames, validateReply] }), headers: etagHeader },
          304: statusText[304] as string,
        },
        [...readErrors, 412, ...sealed],
      ),
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
      responses: responses({ 200: bodyOk(def.itemStateSchema ?? { type: 'object' }) }, [...readErrors, ...sealed]),
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

function publicSchema(def: ResourceDef): Obj {
  return def.publicSchema ? def.publicSchema(def.schema) : def.schema;
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
          properties: {
            'error-message': { type: 'string', description: 'What was wrong, for people' },
            'error-info': {
              type: 'string',
              description: 'The stable code programs match on (docs/ERRORS.md)',
              enum: infoCodes.map(([code]) => code),
            },
            'error-details': {
              type: 'object',
              description: 'Where the problem is: path, x-path, position, parameter, op-index, index, line, column',
            },
          },
          required: ['error-message', 'error-info'],
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
