/**
 * A webhook configuration object compiled for running: templates, filters, patterns and
 * pointers are compiled here once per object revision (at write time, or by the supervisor
 * for a revision this process did not write: compiled.ts), so the message loop only renders
 * and tests. Anything invalid throws an ApiError whose info names the field; the supervisor
 * shows it as status `error`.
 */
import { reservedTopicPrefix, topicAllowed } from '../../bus/topics.js';
import { ApiError } from '../../lib/errors.js';
import { isObject, type JsonObject } from '../../lib/json.js';
import { compileRegex, type Regex } from '../../lib/regex.js';
import { compileTemplate, knownVariable, type Template } from '../../expand/template.js';
import { compileFilters, type MessageFilter } from './filters.js';
import { parsePointer } from '../../lib/json-pointer.js';
import { parseDuration } from '../../lib/duration.js';
import { retryDefaults } from '../schemas.js';
import { compileRetryOn, type RetryOn } from './retry-on.js';
import { extensionsOf, type ExtensionsSpec } from './extensions.js';

/** The limit `max-in-flight: auto` may grow to (exporter/adaptive.ts). */
export const adaptiveMax = 512;

/** The shortest wait between two attempts of one message (`retry-interval` at least this). */
export const minRetryMs = 10;

/** Retry timing of failing POSTs (exporter/retry.ts). */
export type RetryPolicy = {
  /** Attempts in all, 0 = without limit. */
  tries: number;
  baseMs: number;
  maxMs: number;
};

/** The TLS fields of a webhook; exporter/send.ts keeps one undici Agent per profile. */
export type TlsProfile = {
  verify: boolean;
  ca: string | undefined;
  useRootCerts: boolean;
  serverName: string | undefined;
};

export type StartPosition = 'end' | 'beginning' | 'unread';

/**
 * A `value-from-message` variable. `used`: a template refers to it (url, a header, data,
 * ordering-key); only then does a message without its value (and no default) get ignored.
 */
export type MessageVar = { name: string; pointer: readonly string[]; fallback: string | undefined; used: boolean };
/** `tenant` owns the exporter; `fromTenant` (value-from-vault-secret.from-tenant) names a parent sharing the vault. */
export type SecretVar = {
  name: string;
  tenant: string;
  fromTenant?: string;
  vault: string;
  secret: string;
  key: string;
};

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
  /** The vault variables the url uses: a host made from one is hidden in error texts (Target.hidden). */
  urlSecrets: readonly string[];
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
  /** Delivery extensions: client certificate, ordering key, rate limit (extensions.ts). */
  ext: ExtensionsSpec;
};

/** The secret variable name the signing key is read under: not a valid template name, so no clash. */
export const signingVar = 'signing.secret';

export function signingSecretVar(cfg: unknown, tenant: string): SecretVar | undefined {
  if (typeof cfg !== 'object' || cfg === null || Array.isArray(cfg)) return undefined;
  const o = cfg as Record<string, unknown>;
  if (typeof o.vault !== 'string' || typeof o.secret !== 'string' || typeof o.key !== 'string') return undefined;
  return { name: signingVar, tenant, vault: o.vault, secret: o.secret, key: o.key };
}

/**
 * The delivery controls as configured (`enabled`, `dead-letter-topic`, `retry-on`, `signing`,
 * `max-in-flight: auto`); exporter/controls.ts makes them live for one run.
 */
export type ControlsSpec = {
  enabled: boolean;
  deadLetterTopic: string | undefined;
  retryOn: RetryOn | undefined;
  /** The vault secret holding the whsec_ key, read with the other secret variables. */
  signing: SecretVar | undefined;
  adaptive: boolean;
};

export function controlsOf(cfg: JsonObject, tenant: string, rootTenant: string): ControlsSpec {
  const dlt = cfg['dead-letter-topic'];
  if (dlt !== undefined && typeof dlt !== 'string')
    throw bad('dead-letter-topic', 'Cannot use dead-letter-topic: it must be a topic name');
  if (typeof dlt === 'string' && !topicAllowed(dlt, tenant, rootTenant))
    throw bad('dead-letter-topic', `Cannot write to topic ${dlt}: system: topics are for the root tenant only`);
  const signing = signingSecretVar(cfg.signing, tenant);
  if (cfg.signing !== undefined && !signing) throw bad('signing', 'Cannot use signing: it needs vault, secret and key');
  return {
    enabled: cfg.enabled !== false,
    deadLetterTopic: typeof dlt === 'string' ? dlt : undefined,
    retryOn: compileRetryOn(cfg['retry-on']),
    signing,
    adaptive: cfg['max-in-flight'] === 'auto',
  };
}

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
      // `used` is set once the templates are compiled (compileSpec).
      messageVars.push({ name: item.name, pointer, fallback: typeof def === 'string' ? def : undefined, used: true });
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
    return { name: h.name, value: compileTemplate(h.value, { field: `headers[${i}]/value`, isDefined }) };
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
  const ext = extensionsOf(cfg, tenant, isDefined);
  if (ext.clientCert) secretVars.push(ext.clientCert.cert, ext.clientCert.key);
  if (ext.oauth2) secretVars.push(ext.oauth2.clientSecret);
  const data = compileTemplate(cfg.data, { field: 'data', isDefined, json: format === 'json' });
  const referred = new Set(
    [url, data, ...headers.map((h) => h.value), ...(ext.orderingKey ? [ext.orderingKey] : [])].flatMap((t) => [
      ...t.variables,
    ]),
  );
  for (const v of messageVars) v.used = referred.has(v.name);
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
    urlSecrets: secretVars.filter((v) => url.variables.has(v.name)).map((v) => v.name),
    headers,
    hasContentType: headers.some((h) => h.name.toLowerCase() === 'content-type'),
    data,
    format,
    messageVars,
    secretVars,
    // A stored object from before the write-time check (retry-interval at least 10ms) runs at 10ms.
    policy: {
      tries: uint(cfg.tries, 'tries', 0),
      baseMs: Math.max(minRetryMs, baseMs),
      maxMs: Math.max(maxMs, baseMs, minRetryMs),
    },
    maxInFlight: controls.adaptive ? adaptiveMax : Math.max(1, uint(cfg['max-in-flight'], 'max-in-flight', 1)),
    tls: {
      verify: cfg['tls-verify'] !== false,
      ca: typeof ca === 'string' && ca.trim() ? ca : undefined,
      useRootCerts: cfg['use-root-ca-certs'] !== false,
      serverName: typeof sni === 'string' && sni ? sni : undefined,
    },
    controls,
    ext,
  };
}

/**
 * Where a POST goes, split once so undici does not parse the URL again per request. `hidden`:
 * the host, when a vault value made it (a templated URL): error texts then show the origin as
 * `<scheme>://(secret)` and never that host.
 */
export type Target = { origin: string; path: string; hidden?: string };

/** An absolute http(s) URL as a target, or undefined when it is not one. */
export function parseTarget(text: string): Target | undefined {
  if (!URL.canParse(text)) return undefined;
  const u = new URL(text);
  if ((u.protocol !== 'http:' && u.protocol !== 'https:') || u.hostname === '') return undefined;
  return { origin: u.origin, path: u.pathname + u.search };
}
