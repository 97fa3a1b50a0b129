/**
 * The OpenAPI 3.1 document of the v1 API (`GET /v1/openapi.json`, `/v1/openapi.yaml`, no
 * token), made from the route table (api/route-table.ts: every route, its parameters, body and
 * replies) and the JSON Schemas the server validates with (resources/schemas.ts).
 * test/ops/openapi.test.ts checks the document against the routes the server answers, both
 * ways; test/ops/replies.test.ts checks what the server answers against the document.
 */
import { Hono } from 'hono';
import { stringify } from 'yaml';
import type { AppEnv } from '../api/deps.js';
import { searchParams } from '../api/http.js';
import { routes, routeTable, schemaNames, type Route } from '../api/route-table.js';
import { allowRoutes, on } from '../api/routing.js';
import { objectBody, queryParamDocs, statusText, templateParams, type Obj } from '../api/route-schemas.js';
import { resources, type ResourceDef } from '../model/resources.js';
import { parseQuery } from '../query/params.js';
import { rolloutProgressMembers, type Schema } from '../resources/schemas.js';
import { infoCodes } from '../lib/errors.js';

const errorRef = { $ref: '#/components/responses/Error' };

function responses(r: Route): Obj {
  const out: Obj = {};
  for (const [code, reply] of Object.entries(r.replies))
    out[code] = typeof reply === 'string' ? { description: reply } : reply;
  for (const code of r.errors) out[String(code)] = { ...errorRef, description: statusText[code] };
  // While the process starts (waiting for Redis, loading), every route but the two probes
  // answers 503 `starting` in the error format (main/serve.ts).
  if (r.id !== 'healthz' && r.id !== 'readyz')
    out['503'] ??= {
      ...errorRef,
      description: 'edgeplane is starting (starting), or its store does not answer (store-unavailable): try again',
    };
  return out;
}

const security = (r: Route): Obj =>
  r.access === 'public' ? { security: [] } : r.access === 'site' ? { security: [{ siteToken: [] }] } : {};

function operation(r: Route): Obj {
  const parameters = [...queryParamDocs(r.query), ...(r.otherParams ?? [])];
  return {
    operationId: r.id,
    tags: [r.tag],
    summary: r.summary,
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(r.body ? { requestBody: r.body } : {}),
    responses: responses(r),
    ...security(r),
  };
}

/** OPTIONS on a path: its Allow list, behind the same authentication as the path's routes (none for a site's). */
function optionsOperation(ops: readonly Route[]): Obj {
  const allow = ['OPTIONS', ...ops.map((r) => r.method)];
  const first = ops[0] as Route;
  const anonymous = first.access !== 'user';
  return {
    operationId: `options${first.id.charAt(0).toUpperCase()}${first.id.slice(1)}`,
    tags: [first.tag],
    summary: `Allowed methods (${allow.join(', ')})`,
    responses: {
      204: { description: 'Allow lists the methods', headers: { Allow: { schema: { type: 'string' } } } },
      ...(anonymous ? {} : { 401: { ...errorRef, description: statusText[401] } }),
    },
    ...(anonymous ? { security: [] } : {}),
  };
}

function paths(): Obj {
  const byPath = new Map<string, Route[]>();
  for (const r of routeTable) byPath.set(r.path, [...(byPath.get(r.path) ?? []), r]);
  const out: Obj = {};
  for (const [path, ops] of byPath) {
    const params = templateParams(path);
    const item: Obj = params.length > 0 ? { parameters: params } : {};
    for (const r of ops) item[r.method.toLowerCase()] = operation(r);
    item.options = optionsOperation(ops);
    out[path] = item;
  }
  return out;
}

/**
 * A schema as replies show it, at every depth: no member required (`fields` may leave any
 * out) and none refused (`fields` may rename one: `name=id`, `labels=tags/region`).
 */
function partial(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(partial);
  if (!schema || typeof schema !== 'object') return schema;
  const out: Obj = {};
  for (const [k, v] of Object.entries(schema)) {
    if (k === 'required' && Array.isArray(v)) continue;
    if (k === 'additionalProperties' && v === false) continue;
    // Member names and enum/const values are data, not schemas.
    out[k] = k === 'enum' || k === 'const' || k === 'default' || k === 'examples' ? v : partial(v);
  }
  return out;
}

function publicSchema(def: ResourceDef): Schema {
  return def.publicSchema ? def.publicSchema(def.schema) : def.schema;
}

/** What a read of the object shows: its members (fields, content and with-defaults may leave any out or rename it). */
const replySchema = (def: ResourceDef): Obj => partial(publicSchema(def)) as Obj;

/** A state object: the configuration's members and the runtime members the resource adds. */
function stateSchema(def: ResourceDef): Obj {
  const reply = replySchema(def);
  const extra = def.stateMembers;
  const props = { ...(reply.properties as Obj), ...(extra ? (partial(extra) as Obj) : {}) };
  // At a control plane a staged rollout's progress joins its spec (CONTRACT §11).
  const rollout = props.rollout as Obj | undefined;
  if (rollout)
    props.rollout = { ...rollout, properties: { ...(rollout.properties as Obj), ...rolloutProgressMembers } };
  return { ...reply, properties: props };
}

function components(): Obj {
  const schemas: Obj = {};
  for (const def of resources) {
    const n = schemaNames(def);
    schemas[n.config] = publicSchema(def);
    schemas[n.reply] = replySchema(def);
    schemas[n.state] = stateSchema(def);
  }
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
    schemas,
    securitySchemes: {
      bearer: { type: 'http', scheme: 'bearer', description: 'POST /v1/login' },
      siteToken: { type: 'http', scheme: 'bearer', description: 'POST /v1/state/sites/{name}/issue-token' },
    },
    responses: {
      Error: { description: 'An error', content: objectBody({ $ref: '#/components/schemas/errors' }) },
    },
  };
}

function build(): Obj {
  return {
    openapi: '3.1.0',
    info: {
      title: 'edgeplane v1 API',
      version: '1',
      description: 'Configuration (/v1/config), state (/v1/state) and operations of an edgeplane site.',
    },
    // The server that serves the document: its paths are relative to it.
    servers: [{ url: '/', description: 'This edgeplane process' }],
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    security: [{ bearer: [] }],
    paths: paths(),
    components: components(),
  };
}

let cached: { doc: Obj; json: string; yaml: string } | undefined;

/** The document and its two encodings (built once: it depends only on the code). */
function built(): { doc: Obj; json: string; yaml: string } {
  cached ??= (() => {
    const doc = build();
    return { doc, json: JSON.stringify(doc), yaml: stringify(doc, { aliasDuplicateObjects: false }) };
  })();
  return cached;
}

export function openApiRoutes(): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const send = (text: string, type: string) =>
    new Response(text, { status: 200, headers: { 'content-type': type, 'cache-control': 'no-cache' } });
  on(app, routes.openApiJson, (c) => {
    parseQuery(searchParams(c), routes.openApiJson.query);
    return send(built().json, 'application/json');
  });
  on(app, routes.openApiYaml, (c) => {
    parseQuery(searchParams(c), routes.openApiYaml.query);
    return send(built().yaml, 'application/yaml');
  });
  allowRoutes(app);
  return app;
}
