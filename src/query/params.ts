/**
 * Query parameters of every endpoint, checked and compiled before
 * any work is done: an unknown, repeated or malformed parameter is a 400 naming it, and
 * `fields`, `where`, `match-path` are compiled here so their errors carry a position too.
 * Each route passes the names it accepts.
 */
import { ApiError, type DetailFor } from '../lib/errors.js';
import { compileFields, type FieldsSelector } from './fields.js';
import { compileMatchPath, type MatchPath } from './matchpath.js';
import { compileWhere, type WherePredicate } from './where.js';

export const queryParams = [
  'fields',
  'where',
  'match-path',
  'with-defaults',
  'content',
  'keys',
  'count',
  'send-etag',
  'include-tenant-config',
  'dry-run',
  'validate',
  'default-operation',
  'site',
  'watch',
] as const;
export type QueryParam = (typeof queryParams)[number];

export type WithDefaults = 'report-all' | 'trim' | 'explicit';
export type Content = 'config' | 'nonconfig' | 'all';
export type DefaultOperation = 'create' | 'replace' | 'update' | 'delete' | 'remove';

export type ParsedQuery = {
  fields?: FieldsSelector;
  where?: WherePredicate;
  matchPath?: MatchPath;
  /** Absent when not asked for or `with-defaults=false`. */
  withDefaults?: WithDefaults;
  content?: Content;
  defaultOperation?: DefaultOperation;
  site?: string;
  keys: boolean;
  count: boolean;
  sendEtag: boolean;
  includeTenantConfig: boolean;
  dryRun: boolean;
  validate: boolean;
  /** Stream the answer and its changes as Server-Sent Events (api/watch.ts). */
  watch: boolean;
};

export type ParseQueryOptions = {
  /** Field paths `fields` may name (see compileFields); absent, every path is allowed. */
  knownField?: (path: string[]) => boolean;
};

const booleans = {
  keys: 'keys',
  count: 'count',
  'send-etag': 'sendEtag',
  'include-tenant-config': 'includeTenantConfig',
  'dry-run': 'dryRun',
  validate: 'validate',
  watch: 'watch',
} as const satisfies Partial<Record<QueryParam, keyof ParsedQuery>>;

/** An operation (login, token refresh, unseal, restart, rewind, produce) has neither dry-run nor validate: `no-dry-run`. */
export function refuseDryRun(params: URLSearchParams, path: string): void {
  for (const name of ['dry-run', 'validate'])
    if (params.has(name)) throw bad(name, 'no-dry-run', `${path} is an operation and has no ${name}`);
}

function bad(parameter: string, code: DetailFor<'invalid-query'>, message: string): ApiError {
  return new ApiError('invalid-query', `Cannot use the ${parameter} parameter: ${message}`, { code, parameter });
}

function oneOf<const T extends string>(parameter: string, value: string, allowed: readonly T[]): T {
  const hit = allowed.find((a) => a === value);
  if (hit === undefined)
    throw bad(parameter, 'bad-value', `${JSON.stringify(value)} is not one of ${allowed.join(', ')}`);
  return hit;
}

/** No value or `true` → true; `false` → false; anything else is a 400. */
function bool(parameter: string, value: string): boolean {
  if (value === '' || value === 'true') return true;
  if (value === 'false') return false;
  throw bad(parameter, 'bad-value', `${JSON.stringify(value)} is not a boolean (give no value, true or false)`);
}

export function parseQuery(
  params: URLSearchParams,
  allowed: readonly string[],
  opts: ParseQueryOptions = {},
): ParsedQuery {
  const out: ParsedQuery = {
    keys: false,
    count: false,
    sendEtag: false,
    includeTenantConfig: false,
    dryRun: false,
    validate: false,
    watch: false,
  };
  if (params.size === 0) return out;
  const seen = new Set<string>();
  for (const name of params.keys()) {
    if (!allowed.includes(name)) {
      throw bad(
        name,
        'unknown-parameter',
        allowed.length ? `this request accepts only ${allowed.join(', ')}` : 'this request takes no query parameter',
      );
    }
    if (seen.has(name)) throw bad(name, 'duplicate-parameter', 'it is given more than once');
    seen.add(name);
  }
  for (const [name, value] of params) {
    if (Object.hasOwn(booleans, name)) {
      out[booleans[name as keyof typeof booleans]] = bool(name, value);
      continue;
    }
    switch (name) {
      case 'fields':
        out.fields = compileFields(value, opts.knownField ? { known: opts.knownField } : {});
        break;
      case 'where':
        out.where = compileWhere(value);
        break;
      case 'match-path':
        out.matchPath = compileMatchPath(value);
        break;
      case 'with-defaults':
        if (value === 'false') break;
        out.withDefaults =
          value === '' || value === 'true' ? 'report-all' : oneOf(name, value, ['report-all', 'trim', 'explicit']);
        break;
      case 'content':
        out.content = oneOf(name, value, ['config', 'nonconfig', 'all']);
        break;
      case 'default-operation':
        out.defaultOperation = oneOf(name, value, ['create', 'replace', 'update', 'delete', 'remove']);
        break;
      case 'site':
        if (value === '') throw bad(name, 'bad-value', 'give the name of a site');
        out.site = value;
        break;
      default:
        // Allowed by the route but not one this module knows: a programming error, not the client's.
        throw new ApiError('internal', `query parameter ${name} is allowed but has no parser`);
    }
  }
  // keys answers the names only: a count or a selection of fields would be silently dropped.
  const withKeys = out.keys ? (out.count ? 'count' : out.fields ? 'fields' : undefined) : undefined;
  if (withKeys)
    throw new ApiError('invalid-query', `Cannot use keys with ${withKeys}: keys answers the names only`, {
      code: 'conflicting-parameters',
      parameter: 'keys',
    });
  return out;
}
