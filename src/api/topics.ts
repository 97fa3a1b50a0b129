/**
 * Topics of the message bus under /v1/state/volga/topics (read-only state) and the produce
 * operation: the way for applications in containers, and for the embedded bus.
 */
import { Hono } from 'hono';
import { ApiError } from '../lib/errors.js';
import { isObject, type JsonObject } from '../lib/json.js';
import { TOPIC_PATTERN } from '../resources/schemas.js';
import { tenantBus } from '../bus/tenant-topics.js';
import { payloadText } from '../bus/payload.js';
import { auditTopic } from '../auth/audit.js';
import { parseQuery, refuseDryRun } from '../query/params.js';
import type { AppDeps, AppEnv } from './deps.js';
import { checkSite, listReply, principalOf, readBody, reply, searchParams } from './http.js';
import { routes } from './route-table.js';
import { allowRoutes, on } from './routing.js';

const BASE = routes.topics.path;
const topicRe = new RegExp(TOPIC_PATTERN);

function checkTopic(topic: string): void {
  if (!topicRe.test(topic))
    throw new ApiError(
      'invalid-value',
      `Cannot use ${JSON.stringify(topic)} as a topic name: it must match ${TOPIC_PATTERN}`,
      { code: 'bad-topic', path: 'topic' },
    );
}

const toObject = (t: {
  name: string;
  length: number;
  'last-entry-id': string | null;
  'last-entry': JsonObject | null;
}): JsonObject => ({
  name: t.name,
  length: t.length,
  'last-entry-id': t['last-entry-id'],
  'last-entry': t['last-entry'],
});

/** The tenant's own view of the bus: its topics only (tenant-topics.ts). */
const busFor = (deps: AppDeps, tenant: string) => tenantBus(deps.bus, tenant, deps.settings.tenant);

/** The topics of `tenant` as state objects. */
export async function topicStateObjects(
  deps: AppDeps,
  tenant: string,
): Promise<Array<{ path: string; value: JsonObject }>> {
  const bus = busFor(deps, tenant);
  const names = (await bus.listTopics()).sort();
  const infos = await Promise.all(names.map((n) => bus.topicInfo(n)));
  return infos.flatMap((t) => (t ? [{ path: `volga/topics/${t.name}`, value: toObject(t) }] : []));
}

export function topicRoutes(deps: AppDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  on(app, routes.topics, async (c) => {
    const q = parseQuery(searchParams(c), routes.topics.query);
    checkSite(deps, q.site);
    const p = principalOf(c);
    deps.auth.authorize(p, BASE, 'read');
    let items = (await topicStateObjects(deps, p.tenant)).map((i) => i.value);
    if (q.where) {
      const w = q.where;
      items = items.filter((v) => w.test(v));
    }
    return listReply(c, items, q, (v) => (q.fields ? q.fields.apply(v) : v));
  });
  on(app, routes.topic, async (c) => {
    const q = parseQuery(searchParams(c), routes.topic.query);
    checkSite(deps, q.site);
    const topic = c.req.param('topic');
    checkTopic(topic);
    const p = principalOf(c);
    deps.auth.authorize(p, c.req.path, 'read');
    const info = await busFor(deps, p.tenant).topicInfo(topic);
    if (!info) throw new ApiError('not-found', `No topic ${topic}`, { code: 'missing', path: c.req.path });
    const v = toObject(info);
    return reply(c, 200, q.fields ? q.fields.apply(v) : v);
  });
  on(app, routes.produce, async (c) => {
    refuseDryRun(searchParams(c), c.req.path);
    parseQuery(searchParams(c), routes.produce.query);
    const topic = c.req.param('topic');
    checkTopic(topic);
    const p = principalOf(c);
    deps.auth.authorize(p, c.req.path, 'execute');
    // Its records must be the server's own: nobody may add one that looks like them.
    if (topic === auditTopic)
      throw new ApiError('forbidden', `Cannot produce to ${auditTopic}: the server alone writes the audit trail`, {
        code: 'reserved-topic',
        path: c.req.path,
      });
    const body = await readBody(c, deps.settings.maxBodyBytes);
    const doc = body.docs[0];
    if (body.docs.length !== 1 || !isObject(doc))
      throw new ApiError('invalid-document', 'Cannot produce: send one object {payload, producer-name?}', {
        code: 'not-an-object',
      });
    for (const k of Object.keys(doc))
      if (k !== 'payload' && k !== 'producer-name')
        throw new ApiError(
          'invalid-value',
          `Cannot produce with field ${k}: only payload and producer-name are accepted`,
          { code: 'unknown-field', path: k },
        );
    const payload = doc.payload;
    if (payload === undefined)
      throw new ApiError('invalid-value', 'Missing required field payload', {
        code: 'schema-required',
        path: 'payload',
      });
    const producer = doc['producer-name'];
    if (producer !== undefined && typeof producer !== 'string')
      throw new ApiError('invalid-value', 'Cannot use producer-name: it must be a string', {
        code: 'schema-type',
        path: 'producer-name',
      });
    // Read back as the same JSON value: a string such as "42" stays a string (bus/payload.ts).
    const text = payloadText(payload);
    const seqno = await busFor(deps, p.tenant).produce(
      topic,
      producer ? { payload: text, 'producer-name': producer } : { payload: text },
    );
    return reply(c, 201, { seqno }, { headers: { Location: `${BASE}/${topic}` } });
  });
  allowRoutes(app);
  return app;
}
