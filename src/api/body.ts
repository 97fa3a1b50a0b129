/**
 * Request bodies: JSON (strict: duplicate keys rejected) or YAML (unique keys, alias count
 * capped), by Content-Type. Size and nesting are capped before any value reaches the model.
 */
import { Composer, Parser, visit, type Alias, type CST, type Document } from 'yaml';
import { ApiError, type DetailFor } from '../lib/errors.js';
import { jsonSyntaxError, type Json } from '../lib/json.js';
import { errorText } from '../lib/error-text.js';

/** How deep a body may nest (objects and lists in one another): README, docs/ERRORS.md `too-deep`. */
export const MAX_DEPTH = 64;

export type BodyFormat = 'json' | 'yaml' | 'json-patch+json' | 'json-patch+yaml';

export function formatOf(contentType: string | undefined): BodyFormat {
  const type = (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
  switch (type) {
    case 'application/json':
      return 'json';
    case 'application/yaml':
    case 'text/yaml':
    case 'application/x-yaml':
      return 'yaml';
    case 'application/json-patch+json':
      return 'json-patch+json';
    case 'application/json-patch+yaml':
      return 'json-patch+yaml';
    case '':
      throw new ApiError(
        'unsupported-media-type',
        'Cannot read the request body: Content-Type is missing; use application/json or application/yaml',
        { code: 'missing-content-type' },
      );
    default:
      throw new ApiError(
        'unsupported-media-type',
        `Cannot read the request body as ${type}: use application/json, application/yaml, application/json-patch+json or application/json-patch+yaml`,
        { code: 'unsupported-content-type' },
      );
  }
}

function lineCol(text: string, offset: number): { line: number; column: number } {
  let line = 1;
  let last = -1;
  for (let i = 0; i < offset && i < text.length; i++)
    if (text.charCodeAt(i) === 10) {
      line++;
      last = i;
    }
  return { line, column: offset - last };
}

function invalid(text: string, offset: number, reason: string, code: DetailFor<'invalid-document'>): ApiError {
  const { line, column } = lineCol(text, offset);
  return new ApiError(
    'invalid-document',
    `Cannot parse the request body: ${reason} at line ${line}, column ${column}`,
    { code, position: offset, line, column },
  );
}

/**
 * One pass over JSON text before JSON.parse: rejects duplicate keys and nesting deeper than
 * MAX_DEPTH (JSON.parse alone would accept the first and recurse on the second).
 */
function scanJson(text: string): void {
  const keys: Array<Set<string> | null> = [];
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (ch === 0x22 /* " */) {
      const start = i;
      let j = i + 1;
      while (j < text.length && text.charCodeAt(j) !== 0x22) j += text.charCodeAt(j) === 0x5c ? 2 : 1;
      const frame = keys[keys.length - 1];
      if (expectKey && frame) {
        let key: string;
        try {
          key = JSON.parse(text.slice(start, j + 1)) as string;
        } catch {
          return;
        }
        if (frame.has(key)) throw invalid(text, start, `duplicate key ${JSON.stringify(key)}`, 'duplicate-key');
        frame.add(key);
        expectKey = false;
      }
      i = j;
    } else if (ch === 0x7b /* { */ || ch === 0x5b /* [ */) {
      keys.push(ch === 0x7b ? new Set() : null);
      if (keys.length > MAX_DEPTH) throw invalid(text, i, `nesting deeper than ${MAX_DEPTH} levels`, 'too-deep');
      expectKey = ch === 0x7b;
    } else if (ch === 0x7d || ch === 0x5d) {
      keys.pop();
      expectKey = false;
    } else if (ch === 0x2c /* , */) {
      expectKey = keys[keys.length - 1] instanceof Set;
    }
  }
}

export function parseJson(text: string): Json {
  scanJson(text);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    const { position, reason } = jsonSyntaxError(err, text);
    throw invalid(text, position, reason, 'syntax');
  }
  // JSON.parse turns a number beyond double range (1e400) into Infinity, which is no JSON value.
  checkJsonValue(value, 0);
  return value as Json;
}

/** The path text of `at` (keys from the root): `/a/0/b`. */
const pathOf = (at: ReadonlyArray<string | number>): string => at.map((k) => `/${k}`).join('');

/**
 * Checks depth and that every value is plain JSON (YAML may produce dates, binary, maps).
 * `at` holds the keys down to `v`; the path text is made only for an error (every request
 * body passes here, most without one).
 */
function checkJsonValue(v: unknown, depth: number, at: Array<string | number> = []): void {
  if (depth > MAX_DEPTH)
    throw new ApiError(
      'invalid-document',
      `Cannot accept the request body: nesting deeper than ${MAX_DEPTH} levels at ${pathOf(at) || '/'}`,
      { code: 'too-deep', path: pathOf(at) },
    );
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return;
  if (typeof v === 'number') {
    if (!Number.isFinite(v))
      throw new ApiError(
        'invalid-document',
        `Cannot accept the request body: ${v} is not a JSON number at ${pathOf(at) || '/'}`,
        { code: 'not-json', path: pathOf(at) },
      );
    return;
  }
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      if (!(i in v)) continue; // a hole (as forEach skips it)
      at.push(i);
      checkJsonValue(v[i], depth + 1, at);
      at.pop();
    }
    return;
  }
  if (typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) {
    for (const k of Object.keys(v)) {
      at.push(k);
      checkJsonValue((v as Record<string, unknown>)[k], depth + 1, at);
      at.pop();
    }
    return;
  }
  throw new ApiError(
    'invalid-document',
    `Cannot accept the request body: the value at ${pathOf(at) || '/'} is not plain JSON data (use strings, numbers, booleans, lists and maps)`,
    { code: 'not-json', path: pathOf(at) },
  );
}

function firstUnresolvedAlias(doc: Document.Parsed): Alias | undefined {
  let found: Alias | undefined;
  visit(doc, {
    Alias: (_key, node) => {
      if (!node.resolve(doc)) {
        found = node;
        return visit.BREAK;
      }
      return undefined;
    },
  });
  return found;
}

/**
 * Rejects YAML whose collections nest deeper than MAX_DEPTH, on the syntax tree the yaml
 * library's parser makes without recursion, before its composer (which recurses once per
 * level) can run out of stack: 900 levels gave "Maximum call stack size exceeded".
 */
function checkYamlDepth(text: string, tokens: CST.Token[]): void {
  const stack: Array<[CST.Token, number]> = tokens.map((t) => [t, 0]);
  for (let top = stack.pop(); top; top = stack.pop()) {
    const [t, depth] = top;
    if (t.type === 'document') {
      if (t.value) stack.push([t.value, 0]);
    } else if (t.type === 'block-map' || t.type === 'block-seq' || t.type === 'flow-collection') {
      if (depth + 1 > MAX_DEPTH) throw invalid(text, t.offset, `nesting deeper than ${MAX_DEPTH} levels`, 'too-deep');
      for (const item of t.items) {
        if (item.key) stack.push([item.key, depth + 1]);
        if (item.value) stack.push([item.value, depth + 1]);
      }
    }
  }
}

/** YAML text → its documents (several for multi-object bodies). */
export function parseYaml(text: string): Json[] {
  const tokens = [...new Parser().parse(text)];
  checkYamlDepth(text, tokens);
  const list = [...new Composer({ uniqueKeys: true, strict: true }).compose(tokens)];
  const out: Json[] = [];
  for (const doc of list) {
    const err = doc.errors[0];
    if (err) {
      const offset = err.pos[0];
      const code = err.code === 'DUPLICATE_KEY' ? 'duplicate-key' : 'syntax';
      throw invalid(text, offset, err.message.split('\n')[0] ?? err.code, code);
    }
    // An alias without its anchor is also only found by toJS: report it as such, with its place.
    const unresolved = firstUnresolvedAlias(doc);
    if (unresolved)
      throw invalid(
        text,
        unresolved.range?.[0] ?? 0,
        `alias *${unresolved.source} has no anchor before it`,
        'bad-alias',
      );
    let value: unknown;
    try {
      value = doc.toJS({ maxAliasCount: 100 });
    } catch (e) {
      throw new ApiError('invalid-document', `Cannot parse the request body: ${errorText(e)}`, { code: 'alias-limit' });
    }
    if (value === undefined || (value === null && doc.contents === null)) continue;
    checkJsonValue(value, 0);
    out.push(value as Json);
  }
  return out;
}

export type ParsedBody = { format: BodyFormat; docs: Json[] };

/** Parses a body already read as text (size checked by the caller). */
export function parseBody(text: string, contentType: string | undefined): ParsedBody {
  const format = formatOf(contentType);
  if (text.trim() === '')
    throw new ApiError('invalid-document', 'Cannot read the request body: it is empty', { code: 'empty-body' });
  if (format === 'json' || format === 'json-patch+json') {
    const v = parseJson(text);
    return { format, docs: [v] };
  }
  return { format, docs: parseYaml(text) };
}
