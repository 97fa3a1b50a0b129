/** Response encoding: JSON or YAML by Accept, errors in the same encoding. */
import { ApiError } from '../lib/errors.js';
import { isDeepFrozen } from '../store/freeze.js';
import { toYaml } from './yaml-out.js';

export type ReplyFormat = 'json' | 'yaml';

const yamlTypes = new Set(['application/yaml', 'text/yaml', 'application/x-yaml']);

/** Picks the encoding from Accept; throws 406 when nothing acceptable is offered. */
export function negotiate(accept: string | undefined): ReplyFormat {
  if (!accept || accept.trim() === '') return 'json';
  let best: { format: ReplyFormat; q: number } | undefined;
  for (const part of accept.split(',')) {
    const [rawType, ...params] = part.split(';');
    const type = (rawType ?? '').trim().toLowerCase();
    let q = 1;
    for (const p of params) {
      const m = /^\s*q\s*=\s*([0-9.]+)\s*$/.exec(p);
      if (m) q = Number(m[1]);
    }
    if (q <= 0) continue;
    const format: ReplyFormat | undefined =
      type === 'application/json' || type === '*/*' || type === 'application/*'
        ? 'json'
        : yamlTypes.has(type) || type === 'text/*'
          ? 'yaml' // text/* (curl users, some proxies): text/yaml is the text type we serve
          : undefined;
    if (format && (!best || q > best.q)) best = { format, q };
  }
  if (!best)
    throw new ApiError('not-acceptable', `Cannot answer in ${accept}: accept application/json or application/yaml`, {
      code: 'not-acceptable',
    });
  return best.format;
}

export function contentTypeOf(format: ReplyFormat): string {
  return format === 'json' ? 'application/json' : 'application/yaml';
}

/**
 * Encodings of deep-frozen values (stored objects, shared by every reader until they change),
 * each made once: a GET of an unchanged object costs no encoding.
 */
const encoded: Record<ReplyFormat, WeakMap<object, string>> = { json: new WeakMap(), yaml: new WeakMap() };

/** Encodes one value; `multi` marks a multi-object result (YAML: one document per object). */
export function encode(value: unknown, format: ReplyFormat, multi = false): string {
  if (multi || !isDeepFrozen(value)) return encodeFresh(value, format, multi);
  const cache = encoded[format];
  const key = value as object;
  let text = cache.get(key);
  if (text === undefined) {
    text = encodeFresh(value, format, false);
    cache.set(key, text);
  }
  return text;
}

function encodeFresh(value: unknown, format: ReplyFormat, multi: boolean): string {
  if (format === 'json') return JSON.stringify(value);
  if (multi && Array.isArray(value)) {
    return value.map((v) => '---\n' + toYaml(v)).join('');
  }
  return toYaml(value);
}

export function errorResponse(err: ApiError, format: ReplyFormat): Response {
  const headers: Record<string, string> = { 'content-type': contentTypeOf(format), ...err.headers };
  return new Response(encode(err.toBody(), format), { status: err.status, headers });
}
