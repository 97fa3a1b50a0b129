/**
 * Write-time checks of the delivery controls that a JSON Schema cannot express, so a bad
 * value is a 400 when written: `retry-on` items, a dead-letter topic the exporter itself reads
 * (named in `topics` or matched by a `topic-patterns` entry: a failing message would come back forever), and headers no POST could carry.
 */
import { ApiError } from '../../lib/errors.js';
import type { JsonObject } from '../../lib/json.js';
import { compileRegex } from '../../lib/regex.js';
import { retryOnDuplicates } from './retry-on.js';

export function controlProblems(cfg: JsonObject, xPath: string): ApiError[] {
  // The schema reports an entry that is not a class, a code or connection; here only what it
  // cannot see (the same code as text and as a number), so no problem is reported twice.
  const out: ApiError[] = retryOnDuplicates(cfg['retry-on']).map((err) =>
    err.rewrap(`${err.message} (${xPath})`, { 'x-path': xPath }),
  );
  const dlt = cfg['dead-letter-topic'];
  const reads = typeof dlt === 'string' ? readsTopic(cfg, dlt) : undefined;
  if (reads !== undefined)
    out.push(
      new ApiError(
        'invalid-value',
        `Cannot use ${dlt} as dead-letter-topic: the exporter reads that topic (${reads}), so a failing message would come back forever (${xPath})`,
        { code: 'invalid-config', path: 'dead-letter-topic', 'x-path': xPath },
      ),
    );
  out.push(...headerNameProblems(cfg, xPath));
  return out;
}

/** Why the exporter would read `topic` (one of its topics, or a topic-pattern matching it), or undefined. */
function readsTopic(cfg: JsonObject, topic: string): string | undefined {
  const topics = [...(Array.isArray(cfg.topics) ? cfg.topics : []), cfg.topic];
  if (topics.includes(topic)) return 'it is one of its topics';
  const patterns = Array.isArray(cfg['topic-patterns']) ? cfg['topic-patterns'] : [];
  for (const [i, p] of patterns.entries()) {
    if (typeof p !== 'string') continue;
    let matches = false;
    try {
      matches = compileRegex(p, `topic-patterns[${i}]`).test(topic);
    } catch {
      // A pattern that does not compile is reported with its own field.
    }
    if (matches) return `topic-patterns[${i}] ${JSON.stringify(p)} matches it`;
  }
  return undefined;
}

/** Headers the HTTP client frames the request with: undici refuses each of these, at every attempt. */
const framing: Record<string, string> = {
  'content-length': 'the body sets it',
  'transfer-encoding': 'the body sets it',
  'keep-alive': 'connections are kept alive by the exporter',
  upgrade: 'a webhook POST cannot upgrade its connection',
  expect: 'a webhook POST does not wait for 100-continue',
};

/**
 * Headers that would fail every attempt (the message retried forever with the default
 * `tries: 0`, its topic blocked), or that a delivery control sets and a fixed value would
 * silently replace (oauth2's authorization, signing's webhook-* headers).
 */
function headerNameProblems(cfg: JsonObject, xPath: string): ApiError[] {
  const out: ApiError[] = [];
  const refuse = (i: number, name: string, why: string) =>
    out.push(
      new ApiError('invalid-value', `Cannot send header ${name} (headers[${i}]/name): ${why} (${xPath})`, {
        code: 'invalid-config',
        path: `headers[${i}]/name`,
        'x-path': xPath,
      }),
    );
  (Array.isArray(cfg.headers) ? cfg.headers : []).forEach((h, i) => {
    if (typeof h !== 'object' || h === null || Array.isArray(h) || typeof h.name !== 'string') return;
    const name = h.name.toLowerCase();
    const value = typeof h.value === 'string' ? h.value.trim().toLowerCase() : '';
    if (framing[name] !== undefined) refuse(i, h.name, framing[name]);
    else if (name === 'connection' && value !== 'close' && value !== 'keep-alive')
      refuse(i, h.name, 'its value can only be close or keep-alive');
    else if (name === 'authorization' && cfg.oauth2 !== undefined)
      refuse(i, h.name, 'with oauth2 the exporter sends the access token as authorization');
    else if (cfg.signing !== undefined && name.startsWith('webhook-'))
      refuse(i, h.name, 'with signing the exporter sends webhook-id, webhook-timestamp and webhook-signature');
  });
  return out;
}
