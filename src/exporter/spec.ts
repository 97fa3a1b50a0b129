/**
 * A webhook configuration object compiled for running: templates,
 * filters, patterns and pointers are compiled here once per exporter start, so the message
 * loop only renders and tests. Anything invalid throws an ApiError whose info names the
 * field; the supervisor shows it as status `error`.
 */
import { reservedTopicPrefix, topicAllowed } from '../bus/topics.js';
import { ApiError } from '../lib/errors.js';
import { isObject, type JsonObject } from '../lib/json.js';
import { compileRegex, type Regex } from '../lib/regex.js';
import { compileTemplate, knownVariable, type Template } from '../expand/template.js';
import { compileFilters, type MessageFilter } from './filters.js';
import { parsePointer } from '../lib/json-pointer.js';
import { retryDefaults, type RetryPolicy } from './retry.js';
import { parseDuration } from '../lib/duration.js';
import { parseTarget, type Target, type TlsProfile } from './send.js';
import type { SecretVar } from './secret-vars.js';

// Parts of a compiled spec declared beside their use (send.ts, secret-vars.ts), named here too.
export { parseTarget, type Target, type SecretVar };
import { adaptiveMax } from './adaptive.js';
import { controlsOf, type ControlsSpec } from './controls.js';

export type StartPosition = 'end' | 'beginning' | 'unread';

export type MessageVar = { name: string; pointer: readonly string[]; fallback: string | undefined };

export type ExporterSpec = {
  tenant: string;
  name: string;
  topics: readonly string[];
  patterns: readonly Regex[];
  /** Whether a topic found by topic-patterns may be read by this exporter's tenant. */
  topicAllowed: (topic: string) => boolean;
  start: StartPosition;
  filter: MessageFilter;
  url: Template;
  /** Set when url has no variables. */
  staticTarget: Target | undefined;
  headers: ReadonlyArray<{ name: string; value: Template }>;
  hasContentType: boolean;
  data: Template;
  format: 'string' | 'json';
  messageVars: readonly MessageVar[];
  secretVars: readonly SecretVar[];
  policy: RetryPolicy;
  maxInFlight: number;
  tls: TlsProfile;
  /** Delivery controls (controls.ts). */
  controls: ControlsSpec;
};

function bad(path: string, message: string): ApiError {
  return new ApiError('invalid-value', message, { code: 'invalid-config', path });
}

function strings(v: unknown, path: string): string[] {
  if (v === undefined) return [];
  if (!Array.isArray(v) || !v.every((s) => typeof s === 'string'))
    throw bad(path, `Cannot use ${path}: it must be a list of strings`);
  return v as string[];
}

function uint(v: unknown, path: string, def: number): number {
  if (v === undefined) return def;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > 0xffffffff)
    throw bad(path, `Cannot use ${path}: it must be a whole number from 0 to 4294967295`);
  return v;
}

function variables(cfg: JsonObject, tenant: string): { messageVars: MessageVar[]; secretVars: SecretVar[] } {
  const messageVars: MessageVar[] = [];
  const secretVars: SecretVar[] = [];
  const list = cfg.variables ?? [];
  if (!Array.isArray(list)) throw bad('variables', 'Cannot use variables: it must be a list');
  list.forEach((item, i) => {
    const path = `variables[${i}]`;
    if (!isObject(item) || typeof item.name !== 'string') throw bad(path, `Cannot use ${path}: it needs a name`);
    const fromMsg = item['value-from-message'];
    const fromSecret = item['value-from-vault-secret'];
    if (isObject(fromMsg)) {
      const text = fromMsg['json-pointer'];
      const pointer = typeof text === 'string' ? parsePointer(text) : undefined;
      if (!pointer)
        throw bad(
          `${path}/value-from-message/json-pointer`,
          `Cannot use ${JSON.stringify(text)} as a JSON pointer: it must be empty or start with /, and ~ is only written as ~0 or ~1`,
        );
      const def = fromMsg.default;
      messageVars.push({ name: item.name, pointer, fallback: typeof def === 'string' ? def : undefined });
    } else if (isObject(fromSecret)) {
      const get = (k: string) => {
        const v = fromSecret[k];
        if (typeof v !== 'string' || !v)
          throw bad(`${path}/value-from-vault-secret/${k}`, `Cannot use ${path}: value-from-vault-secret needs ${k}`);
        return v;
      };
      const from = fromSecret['from-tenant'];
      secretVars.push({
        name: item.name,
        tenant,
        ...(typeof from === 'string' && from && from !== tenant ? { fromTenant: from } : {}),
        vault: get('vault'),
        secret: get('secret'),
        key: get('key'),
      });
    } else {
      throw bad(path, `Cannot use ${path}: it needs value-from-message or value-from-vault-secret`);
    }
  });
  return { messageVars, secretVars };
}

/** `rootTenant`: the tenant whose exporters may read system: topics (bus/topics.ts). */
export function compileSpec(tenant: string, cfg: JsonObject, rootTenant: string = tenant): ExporterSpec {
  const name = typeof cfg.name === 'string' ? cfg.name : '';
  const topics = new Set(strings(cfg.topics, 'topics'));
  if (typeof cfg.topic === 'string') topics.add(cfg.topic);
  for (const t of topics)
    if (!topicAllowed(t, tenant, rootTenant))
      throw bad('topics', `Cannot read topic ${t}: ${reservedTopicPrefix} topics are for the root tenant only`);
  const topicAllowedHere = (t: string) => topicAllowed(t, tenant, rootTenant);
  const patterns = strings(cfg['topic-patterns'], 'topic-patterns').map((p, i) =>
    compileRegex(p, `topic-patterns[${i}]`),
  );
  const start = cfg['start-position'] ?? 'end';
  if (start !== 'end' && start !== 'beginning' && start !== 'unread')
    throw bad('start-position', 'Cannot use start-position: it must be end, beginning or unread');
  const format = cfg['data-format'] ?? 'string';
  if (format !== 'string' && format !== 'json')
    throw bad('data-format', 'Cannot use data-format: it must be string or json');

  const { messageVars, secretVars } = variables(cfg, tenant);
  const declared = new Set([...messageVars.map((v) => v.name), ...secretVars.map((v) => v.name)]);
  const isDefined = (n: string) => knownVariable(n, declared);
  if (typeof cfg.url !== 'string') throw bad('url', 'Cannot run without url');
  if (typeof cfg.data !== 'string') throw bad('data', 'Cannot run without data');
  const url = compileTemplate(cfg.url, { field: 'url', isDefined });
  let staticTarget: Target | undefined;
  if (url.static) {
    const r = url.render(() => undefined);
    staticTarget = r.ok ? parseTarget(r.value) : undefined;
    if (!staticTarget)
      throw bad('url', `Cannot use ${JSON.stringify(cfg.url)} as url: it must be an absolute http or https URL`);
  }
  const rawHeaders = cfg.headers ?? [];
  if (!Array.isArray(rawHeaders)) throw bad('headers', 'Cannot use headers: it must be a list');
  const headers = rawHeaders.map((h, i) => {
    if (!isObject(h) || typeof h.name !== 'string' || typeof h.value !== 'string')
      throw bad(`headers[${i}]`, `Cannot use headers[${i}]: it needs name and value strings`);
    return { name: h.name, value: compileTemplate(h.value, { field: `headers[${i}].value`, isDefined }) };
  });

  const baseMs = parseDuration(
    typeof cfg['retry-interval'] === 'string' ? cfg['retry-interval'] : retryDefaults['retry-interval'],
    'retry-interval',
  );
  const maxMs = parseDuration(
    typeof cfg['max-retry-interval'] === 'string' ? cfg['max-retry-interval'] : retryDefaults['max-retry-interval'],
    'max-retry-interval',
  );
  const ca = cfg['ca-cert'];
  const sni = cfg['server-name-indication'];
  const controls = controlsOf(cfg, tenant, rootTenant);
  if (controls.signing) secretVars.push(controls.signing);
  return {
    tenant,
    name,
    topics: [...topics],
    patterns,
    topicAllowed: topicAllowedHere,
    start,
    filter: compileFilters({
      'match-re': strings(cfg['match-re'], 'match-re'),
      'match-string': strings(cfg['match-string'], 'match-string'),
      'no-match-re': strings(cfg['no-match-re'], 'no-match-re'),
      'no-match-string': strings(cfg['no-match-string'], 'no-match-string'),
    }),
    url,
    staticTarget,
    headers,
    hasContentType: headers.some((h) => h.name.toLowerCase() === 'content-type'),
    data: compileTemplate(cfg.data, { field: 'data', isDefined }),
    format,
    messageVars,
    secretVars,
    policy: { tries: uint(cfg.tries, 'tries', 0), baseMs, maxMs: Math.max(maxMs, baseMs) },
    maxInFlight: controls.adaptive ? adaptiveMax : Math.max(1, uint(cfg['max-in-flight'], 'max-in-flight', 1)),
    tls: {
      verify: cfg['tls-verify'] !== false,
      ca: typeof ca === 'string' && ca.trim() ? ca : undefined,
      useRootCerts: cfg['use-root-ca-certs'] !== false,
      serverName: typeof sni === 'string' && sni ? sni : undefined,
    },
    controls,
  };
}
