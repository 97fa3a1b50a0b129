/**
 * Checks a reply the server gave against the OpenAPI document (ajv, JSON Schema draft
 * 2020-12, the document's dialect): the operation is found by method and path template, the
 * status must be declared, the content type must be one the reply declares, and the body must
 * match that media type's schema. Replies are recorded by helpers/api.ts when
 * EDGEPLANE_RECORD_REPLIES names a directory (one file per test process), so any suite's
 * replies can be checked (test/ops/replies.test.ts, EDGEPLANE_CHECK_REPLIES).
 */
import { appendFileSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { parse as parseYaml, parseAllDocuments } from 'yaml';

export type RecordedReply = {
  method: string;
  path: string;
  status: number;
  contentType: string | null;
  /** The body's text ('' for none; not read for an event stream). */
  body: string;
};

type Obj = Record<string, unknown>;
type Doc = { paths: Record<string, Record<string, Obj>>; components: { responses: Record<string, Obj> } };

/** The outcome of one reply: the operation it belongs to (undefined: no route), and what is wrong. */
export type Checked = { operation?: string; problem?: string };

const docId = 'https://edgeplane.test/openapi.json';
const pointer = (parts: string[]) => parts.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

export function replyChecker(doc: Doc): (r: RecordedReply) => Checked {
  const ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: false });
  ajv.addSchema({ ...(doc as Obj), $id: docId });
  const templates = Object.keys(doc.paths).map((t) => {
    const names = [...t.matchAll(/\{[^}]+\}/g)].length;
    const re = new RegExp('^' + t.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+') + '$');
    return { t, re, names };
  });
  // The most specific template first (fewest parameters).
  templates.sort((a, b) => a.names - b.names);
  const compiled = new Map<string, ValidateFunction>();

  return (r) => {
    const path = r.path.split('?')[0] as string;
    const match = templates.find((x) => x.re.test(path));
    if (!match) return {};
    const method = r.method === 'HEAD' ? 'get' : r.method.toLowerCase();
    const item = doc.paths[match.t] as Record<string, Obj>;
    const op = item[method];
    if (!op) return r.status === 405 ? {} : { problem: `${r.method} ${match.t}: no such operation (${r.status})` };
    const operation = `${r.method === 'HEAD' ? 'GET' : r.method} ${match.t}`;
    const responses = op.responses as Record<string, Obj>;
    let reply = responses[String(r.status)] ?? responses.default;
    const where = ['paths', match.t, method, 'responses', String(r.status)];
    if (!reply) return { operation, problem: `status ${r.status} is not declared` };
    if (typeof reply.$ref === 'string') {
      const name = reply.$ref.split('/').pop() as string;
      reply = doc.components.responses[name] as Obj;
      where.splice(0, where.length, 'components', 'responses', name);
    }
    const content = reply.content as Record<string, Obj> | undefined;
    if (r.body === '' || r.method === 'HEAD') return { operation };
    if (!content) return { operation, problem: `status ${r.status} declares no body, the reply has one` };
    const type = (r.contentType ?? '').split(';')[0]?.trim() ?? '';
    const mediaType = type in content ? type : '*/*' in content ? '*/*' : undefined;
    if (!mediaType) return { operation, problem: `content type ${type} is not declared (${Object.keys(content)})` };
    if (mediaType === 'text/event-stream') return { operation };
    const key = pointer([...where, 'content', mediaType, 'schema']);
    let validate = compiled.get(key);
    if (!validate) compiled.set(key, (validate = ajv.compile({ $ref: `${docId}#/${key}` })));
    const candidates = bodies(type, r.body);
    if (candidates.some((v) => validate(v))) return { operation };
    validate(candidates[0]);
    return {
      operation,
      problem: `body does not match: ${ajv.errorsText(validate.errors)}; body ${r.body.slice(0, 300)}`,
    };
  };
}

/** The values a body may stand for (a YAML list is one document per object). */
function bodies(type: string, text: string): unknown[] {
  if (type === 'application/json') return [JSON.parse(text)];
  if (type === 'application/yaml') {
    if (text.startsWith('---')) return [parseAllDocuments(text).map((d) => d.toJSON())];
    const one = parseYaml(text) as unknown;
    return [one, [one]];
  }
  return [text];
}

const recordDir = process.env.EDGEPLANE_RECORD_REPLIES;

/** Records a reply when EDGEPLANE_RECORD_REPLIES is set (the body read from a clone). */
export async function recordReply(method: string, path: string, res: Response): Promise<void> {
  if (!recordDir) return;
  const contentType = res.headers.get('content-type');
  const body = contentType?.startsWith('text/event-stream') ? '' : await res.clone().text();
  recordRead({ method, path, status: res.status, contentType, body });
}

/** Records a reply whose body was read already (helpers/fleet.ts's client over HTTP). */
export function recordRead(line: RecordedReply): void {
  if (!recordDir) return;
  mkdirSync(recordDir, { recursive: true });
  appendFileSync(join(recordDir, `replies-${process.pid}.jsonl`), JSON.stringify(line) + '\n');
}

/** Every reply recorded in a directory. */
export function recordedReplies(dir: string): RecordedReply[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.jsonl'))
    .flatMap((f) =>
      readFileSync(join(dir, f), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as RecordedReply),
    );
}
