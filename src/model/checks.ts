/**
 * Semantic checks a JSON Schema cannot express, run at write time so a bad pattern,
 * template or label expression is a 400 then, never a failure per message later.
 */
import { ApiError } from '../errors.js';
import type { Json, JsonObject } from '../json.js';
import { compileRegex } from './regex.js';
import { compileTemplate, knownVariable } from '../expand/template.js';
import { compileLabelExpr } from '../query/labels.js';
import { policyProblems } from '../auth/policies.js';
import { durationMs } from '../lib/duration.js';
import { retryDefaults } from './schemas.js';

function strings(v: Json | undefined): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
}

/** Runs `fn` and turns a thrown ApiError into a list entry, adding x-path and the field. */
function attempt(out: ApiError[], xPath: string, field: string, fn: () => void): void {
  try {
    fn();
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    out.push(
      err.rewrap(`${err.message} (${xPath})`, {
        path: err.info?.path ?? field,
        'x-path': xPath,
      }),
    );
  }
}

function checkWebhook(obj: JsonObject, xPath: string): ApiError[] {
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
    if (declared.has(n) || knownVariable(n, new Set())) {
      out.push(
        new ApiError(
          'invalid-value',
          `Cannot declare variable ${n} in variables[${i}]: the name is already defined (${xPath})`,
          { code: 'duplicate-variable', path: `variables[${i}]/name`, 'x-path': xPath },
        ),
      );
    }
    declared.add(n);
  });
  const isDefined = (name: string) => knownVariable(name, declared);
  if (typeof obj.url === 'string')
    attempt(out, xPath, 'url', () => compileTemplate(obj.url as string, { field: 'url', isDefined }));
  if (typeof obj.data === 'string')
    attempt(out, xPath, 'data', () => compileTemplate(obj.data as string, { field: 'data', isDefined }));
  (Array.isArray(obj.headers) ? obj.headers : []).forEach((h, i) => {
    const value = typeof h === 'object' && h !== null && !Array.isArray(h) ? h.value : undefined;
    if (typeof value === 'string')
      attempt(out, xPath, `headers[${i}]/value`, () =>
        compileTemplate(value, { field: `headers[${i}]/value`, isDefined }),
      );
  });
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
  const ri = String(obj['retry-interval'] ?? retryDefaults['retry-interval']);
  const mri = String(obj['max-retry-interval'] ?? retryDefaults['max-retry-interval']);
  if ((durationMs(ri) ?? NaN) > (durationMs(mri) ?? NaN)) {
    out.push(
      new ApiError(
        'invalid-value',
        `Cannot use retry-interval ${ri} with max-retry-interval ${mri}: the first must not exceed the second (${xPath})`,
        { code: 'retry-interval', path: 'retry-interval', 'x-path': xPath },
      ),
    );
  }
  return out;
}

function checkDeployment(obj: JsonObject, xPath: string): ApiError[] {
  const out: ApiError[] = [];
  const placement = obj.placement;
  if (
    typeof placement === 'object' &&
    placement !== null &&
    !Array.isArray(placement) &&
    typeof placement['match-site-labels'] === 'string'
  ) {
    const expr = placement['match-site-labels'];
    attempt(out, xPath, 'placement/match-site-labels', () => compileLabelExpr(expr));
  }
  return out;
}

/** Policy rules: path patterns and operations, with positions (auth/policies.ts). */
function checkPolicy(obj: JsonObject, xPath: string): ApiError[] {
  return policyProblems(obj).map((e) => e.rewrap(`${e.message} (${xPath})`, { 'x-path': xPath }));
}

const checks: Record<string, (obj: JsonObject, xPath: string) => ApiError[]> = {
  webhook: checkWebhook,
  deployment: checkDeployment,
  policy: checkPolicy,
};

export function semanticErrors(resourceId: string, obj: JsonObject, xPath: string): ApiError[] {
  return checks[resourceId]?.(obj, xPath) ?? [];
}
