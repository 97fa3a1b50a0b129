/**
 * Semantic checks of a webhook a JSON Schema cannot express, run at write time so a bad
 * pattern, template or label expression is a 400 then, never a failure per message later.
 */
import { ApiError } from '../../lib/errors.js';
import type { Json, JsonObject } from '../../lib/json.js';
import { compileRegex } from '../../lib/regex.js';
import { builtinName, compileTemplate, knownVariable, type Template } from '../../expand/template.js';
import { isObject, jsonSyntaxError } from '../../lib/json.js';
import { compileLabelExpr } from '../../query/labels.js';
import { durationMs, durationTooLong } from '../../lib/duration.js';
import { retryDefaults } from '../schemas.js';
import { attempt } from '../problems.js';
import { controlProblems } from './control-checks.js';
import { minRetryMs, parseTarget, type ExporterSpec } from './spec.js';
import { badHeaderChar } from './header-value.js';

function strings(v: Json | undefined): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

/**
 * The write-time checks of a webhook, every problem with its field. `spec` is the object's
 * compiled form when it compiled: its patterns, filters and templates are then known good
 * and are used as they are; without it each field is compiled alone to name its problem.
 */
export function checkWebhook(obj: JsonObject, xPath: string, spec: ExporterSpec | undefined): ApiError[] {
  const out: ApiError[] = [];
  if (obj.topic === undefined && strings(obj.topics).length === 0 && strings(obj['topic-patterns']).length === 0) {
    out.push(
      new ApiError('invalid-value', `Missing topics: give topics, topic-patterns or topic (${xPath})`, {
        code: 'no-topics',
        path: 'topics',
        'x-path': xPath,
      }),
    );
  }
  if (!spec)
    for (const field of ['topic-patterns', 'match-re', 'no-match-re'] as const) {
      strings(obj[field]).forEach((p, i) =>
        attempt(out, xPath, `${field}[${i}]`, () => compileRegex(p, `${field}[${i}]`)),
      );
    }
  const vars = Array.isArray(obj.variables) ? obj.variables : [];
  const declared = new Set<string>();
  vars.forEach((v, i) => {
    const n = typeof v === 'object' && v !== null && !Array.isArray(v) ? v.name : undefined;
    if (typeof n !== 'string') return;
    // A name declared twice is a duplicate key of the list (duplicateKeyErrors).
    if (builtinName(n)) {
      out.push(
        new ApiError(
          'invalid-value',
          `Cannot declare variable ${n} in variables[${i}]: the name is a built-in variable (${xPath})`,
          { code: 'duplicate-variable', path: `variables[${i}]/name`, 'x-path': xPath },
        ),
      );
    }
    declared.add(n);
  });
  headerTextProblems(obj, xPath, out);
  templateProblems(obj, xPath, spec, declared, out);
  const placement = obj['site-placement'];
  if (
    typeof placement === 'object' &&
    placement !== null &&
    !Array.isArray(placement) &&
    typeof placement['match-site-labels'] === 'string'
  ) {
    const expr = placement['match-site-labels'];
    attempt(out, xPath, 'site-placement/match-site-labels', () => compileLabelExpr(expr));
  }
  retryProblems(obj, xPath, out);
  out.push(...controlProblems(obj, xPath));
  const oauth2 = obj.oauth2;
  const tokenUrl = isObject(oauth2) ? oauth2['token-url'] : undefined;
  if (typeof tokenUrl === 'string' && !/^https?:$/.test(URL.parse(tokenUrl)?.protocol ?? ''))
    out.push(
      new ApiError(
        'invalid-value',
        `Cannot use ${JSON.stringify(tokenUrl.slice(0, 200))} as oauth2/token-url: it must be an absolute http or https URL (${xPath})`,
        { code: 'invalid-url', path: 'oauth2/token-url', 'x-path': xPath },
      ),
    );
  return out;
}

/** A header value whose fixed text holds CR or LF could never be sent (header-value.ts). */
function headerTextProblems(obj: JsonObject, xPath: string, out: ApiError[]): void {
  (Array.isArray(obj.headers) ? obj.headers : []).forEach((h, i) => {
    const value = typeof h === 'object' && h !== null && !Array.isArray(h) ? h.value : undefined;
    if (typeof value !== 'string') return;
    let fixedText: string;
    try {
      // The text without its expressions (their values are checked at run time).
      fixedText = compileTemplate(value, { field: `headers[${i}]/value`, isDefined: () => true }).renderSample(
        () => '',
      ).text;
    } catch {
      return; // the template's own problem is reported with its position below
    }
    const bad = badHeaderChar(fixedText);
    if (bad === undefined) return;
    const name = typeof h === 'object' && h !== null && !Array.isArray(h) ? String(h.name) : '?';
    out.push(
      new ApiError(
        'invalid-value',
        `Cannot use the value of header ${name} (headers[${i}]/value): its text ${bad.replace(/ at position \d+$/, '')}, which a header cannot carry (${xPath})`,
        { code: 'invalid-header-value', path: `headers[${i}]/value`, 'x-path': xPath },
      ),
    );
  });
}

/** url, data, ordering-key and header templates: from the compiled form, else each compiled alone. */
function templateProblems(
  obj: JsonObject,
  xPath: string,
  spec: ExporterSpec | undefined,
  declared: ReadonlySet<string>,
  out: ApiError[],
): void {
  if (spec) {
    const { url, data } = spec;
    if (url.static) attempt(out, xPath, 'url', () => checkStaticUrl(url.renderSample(() => '')));
    if (spec.format === 'json') attempt(out, xPath, 'data', () => checkJsonData(data));
  } else {
    const isDefined = (name: string) => knownVariable(name, declared);
    if (typeof obj.url === 'string')
      attempt(out, xPath, 'url', () => {
        const url = compileTemplate(obj.url as string, { field: 'url', isDefined });
        if (url.static) checkStaticUrl(url.renderSample(() => ''));
      });
    if (typeof obj.data === 'string')
      attempt(out, xPath, 'data', () => {
        const data = compileTemplate(obj.data as string, { field: 'data', isDefined });
        if (obj['data-format'] === 'json') checkJsonData(data);
      });
    const orderingKey = obj['ordering-key'];
    if (typeof orderingKey === 'string')
      attempt(out, xPath, 'ordering-key', () => compileTemplate(orderingKey, { field: 'ordering-key', isDefined }));
    (Array.isArray(obj.headers) ? obj.headers : []).forEach((h, i) => {
      const value = typeof h === 'object' && h !== null && !Array.isArray(h) ? h.value : undefined;
      if (typeof value === 'string')
        attempt(out, xPath, `headers[${i}]/value`, () =>
          compileTemplate(value, { field: `headers[${i}]/value`, isDefined }),
        );
    });
  }
}

/**
 * retry-interval at least minRetryMs, and not above max-retry-interval; it, max-retry-interval
 * and batch/max-wait at most 576h (a longer timer fires at once: a retry loop).
 */
function retryProblems(obj: JsonObject, xPath: string, out: ApiError[]): void {
  const ri = String(obj['retry-interval'] ?? retryDefaults['retry-interval']);
  const mri = String(obj['max-retry-interval'] ?? retryDefaults['max-retry-interval']);
  const batch = obj.batch;
  const wait = typeof batch === 'object' && batch !== null && !Array.isArray(batch) ? batch['max-wait'] : undefined;
  for (const [text, field] of [
    [ri, 'retry-interval'],
    [mri, 'max-retry-interval'],
    [typeof wait === 'string' ? wait : '', 'batch/max-wait'],
  ] as const) {
    const long = durationTooLong(text, field);
    if (long) out.push(long.rewrap(`${long.message} (${xPath})`, { 'x-path': xPath }));
  }
  if ((durationMs(ri) ?? Infinity) < minRetryMs) {
    out.push(
      new ApiError('invalid-value', `Cannot use retry-interval ${ri}: it must be at least ${minRetryMs}ms (${xPath})`, {
        code: 'retry-interval',
        path: 'retry-interval',
        'x-path': xPath,
      }),
    );
  }
  if ((durationMs(ri) ?? NaN) > (durationMs(mri) ?? NaN)) {
    out.push(
      new ApiError(
        'invalid-value',
        `Cannot use retry-interval ${ri} with max-retry-interval ${mri}: the first must not exceed the second (${xPath})`,
        { code: 'retry-interval', path: 'retry-interval', 'x-path': xPath },
      ),
    );
  }
}

/** A url without variables is known now: it must be an absolute http or https URL. */
function checkStaticUrl({ text }: { text: string }): void {
  if (parseTarget(text)) return;
  throw new ApiError(
    'invalid-value',
    `Cannot use ${JSON.stringify(text.slice(0, 200))} as url: it must be an absolute http or https URL`,
    { code: 'invalid-url', path: 'url' },
  );
}

/**
 * Values that stand for each variable when a `data-format: json` template is tried at write
 * time: realistic ones first (MSG is a message object, MSG_PAYLOAD a JSON object), then the
 * same number everywhere (fits both inside a JSON string and as a value), then a JSON string.
 * The template is accepted when one of them gives JSON, so only a template that cannot give
 * JSON whatever the message (a missing `}`, a stray comma) is refused.
 */
const sampleMsg = {
  time: '2024-01-01T00:00:00.000Z',
  mtime: 1704067200000,
  seqno: '1704067200000-0',
  remain: 0,
  'producer-name': 'producer',
  host: 'host',
  origin: 'origin',
  payload: { value: 1 },
};
const realistic: Record<string, string> = {
  MSG: JSON.stringify(sampleMsg),
  MSG_PAYLOAD: JSON.stringify(sampleMsg.payload),
  MSG_MTIME: String(sampleMsg.mtime),
  MSG_REMAIN: '0',
};
/**
 * Built-ins whose value is always text of a known shape (never a number or JSON): each keeps its
 * realistic value in every rendering, so `{"a": ${MSG_SEQNO}}` (an id such as 1704067200000-0,
 * never JSON unquoted) is refused, not accepted because 0 would fit there.
 */
const textual: Record<string, string> = {
  MSG_SEQNO: sampleMsg.seqno,
  MSG_TIME: sampleMsg.time,
  MSG_HOST: 'host',
  MSG_ORIGIN: 'origin',
  MSG_PRODUCER_NAME: 'producer',
  TOPIC: 'topic',
  SYS_SITE: 'site',
  SYS_TENANT: 'tenant',
  SYS_GLOBAL_DOMAIN: 'edge.example',
};
const fixed = (v: string): string | undefined =>
  textual[v] ??
  (v.startsWith('SYS_DNS_ZONES[') ? 'zone.example' : v.startsWith('SYS_SITE_LABELS[') ? 'label' : undefined);
const samples: Array<(variable: string) => string> = [
  (v) => fixed(v) ?? realistic[v] ?? 'sample',
  (v) => fixed(v) ?? '0',
  (v) => fixed(v) ?? '"sample"',
];

function checkJsonData(data: Template): void {
  // Of the renderings that fail, the one that got furthest names the problem: a failure at a
  // variable's sample (the "s" of sample) is no fault of the text the user wrote after it.
  let best: { position: number; reason: string } | undefined;
  for (const sample of samples) {
    const r = data.renderSample(sample);
    try {
      JSON.parse(r.text);
      return;
    } catch (err) {
      const e = jsonSyntaxError(err, r.text);
      const position = r.sourceAt(e.position);
      if (!best || position > best.position) best = { position, reason: e.reason };
    }
  }
  if (!best) return;
  throw new ApiError(
    'invalid-value',
    `Cannot use data as a JSON template (data-format json): with sample values it gives no JSON (${best.reason}) at position ${best.position}`,
    { code: 'invalid-json-template', path: 'data', position: best.position },
  );
}
