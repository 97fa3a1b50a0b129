/**
 * Every client-visible failure is an ApiError with a stable code. Callers match on `code`,
 * never on message text. The HTTP status comes from the table below.
 */
export const errorStatus = {
  'bad-request': 400,
  'invalid-document': 400,
  'invalid-value': 400,
  'invalid-query': 400,
  'invalid-patch': 400,
  'unsupported-operation': 400,
  unauthorized: 401,
  forbidden: 403,
  'not-found': 404,
  'method-not-allowed': 405,
  'not-acceptable': 406,
  exists: 409,
  conflict: 409,
  'request-timeout': 408,
  'precondition-failed': 412,
  'expectation-failed': 417,
  'payload-too-large': 413,
  'unsupported-media-type': 415,
  'too-many-requests': 429,
  'headers-too-large': 431,
  internal: 500,
  sealed: 503,
  unavailable: 503,
} as const satisfies Record<string, number>;

export type ErrorCode = keyof typeof errorStatus;

/**
 * The specific codes a client reads in `error-info` (a string): one per rule, each with the
 * HTTP status of the replies that carry it. An error without one carries its general code (the
 * table above) instead. docs/ERRORS.md explains each code of both tables;
 * test/lib/errors-doc.test.ts fails when they differ. To add a code: one line here (sorted) and
 * one row there.
 */
export const errorDetails = {
  'alias-limit': 400,
  'bad-alias': 400,
  'bad-authorization': 401,
  'bad-credentials': 401,
  'bad-http': 400,
  'bad-index': 400,
  'bad-key': 400,
  'bad-metrics-token': 401,
  'bad-name': 400,
  'bad-op': 400,
  'bad-patch': 400,
  'bad-path': 400,
  'bad-pattern': 400,
  'bad-pointer': 400,
  'bad-request-target': 400,
  'bad-topic': 400,
  'bad-value': 400,
  'bad-x-etag': 400,
  'bad-x-json-patch': 400,
  'bad-x-operation': 400,
  'bad-x-tenant': 400,
  'body-too-large': 413,
  'changed-by-other-tenant': 409,
  'chunk-extensions-too-large': 413,
  'conflicting-operations': 400,
  'conflicting-parameters': 400,
  'conflicting-rename': 400,
  contention: 409,
  'descendant-not-last': 400,
  'document-count': 400,
  'dot-segment': 400,
  'duplicate-key': 400,
  'duplicate-output': 400,
  'duplicate-parameter': 400,
  'duplicate-variable': 400,
  empty: 400,
  'empty-body': 400,
  'empty-component': 400,
  encoding: 400,
  'etag-match': 412,
  'etag-mismatch': 412,
  exists: 409,
  'expected-function': 400,
  'expected-variable': 400,
  forbidden: 403,
  'headers-too-large': 431,
  'in-use': 409,
  initialised: 409,
  'invalid-config': 400,
  'invalid-duration': 400,
  'invalid-header-value': 400,
  'invalid-integer': 400,
  'invalid-json-template': 400,
  'invalid-login': 400,
  'invalid-password': 400,
  'invalid-password-hash': 400,
  'invalid-policy': 400,
  'invalid-rewind': 400,
  'invalid-site-token': 401,
  'invalid-token': 401,
  'invalid-url': 400,
  'literal-required': 400,
  'login-throttled': 429,
  'managed-by-control-plane': 409,
  'method-not-allowed': 405,
  missing: 404,
  'missing-body': 400,
  'missing-content-type': 415,
  'missing-index': 400,
  'missing-parent': 404,
  'missing-target': 400,
  'missing-token': 401,
  'missing-x-path': 400,
  'name-mismatch': 400,
  'no-body': 400,
  'no-dry-run': 400,
  'no-match': 404,
  'no-topics': 400,
  'not-acceptable': 406,
  'not-an-object': 400,
  'not-found': 404,
  'not-initialised': 400,
  'not-json': 400,
  'not-replicated': 503,
  'not-running': 404,
  'other-site': 403,
  'outside-root': 400,
  'partial-wildcard': 400,
  'regex-syntax': 400,
  'regex-unsupported': 400,
  'request-timeout': 408,
  'reserved-name': 400,
  'reserved-topic': 403,
  'retry-interval': 400,
  'root-tenant-only': 403,
  'rollout-percent': 400,
  'rollout-state': 409,
  'schema-const': 400,
  'schema-enum': 400,
  'schema-invalid': 400,
  'schema-maxLength': 400,
  'schema-maxProperties': 400,
  'schema-maximum': 400,
  'schema-minItems': 400,
  'schema-maxItems': 400,
  'no-stored-value': 400,
  'schema-minLength': 400,
  'schema-minProperties': 400,
  'schema-minimum': 400,
  'schema-pattern': 400,
  'schema-required': 400,
  'schema-type': 400,
  'schema-uniqueItems': 400,
  sealed: 503,
  'site-unreachable': 503,
  starting: 503,
  'store-unavailable': 503,
  syntax: 400,
  'tenant-exists': 409,
  'test-failed': 400,
  'too-deep': 400,
  'where-too-costly': 400,
  type: 400,
  'undefined-variable': 400,
  'unexpected-character': 400,
  'unknown-field': 400,
  'unknown-function': 400,
  'unknown-parameter': 400,
  'unknown-path': 404,
  'unknown-revision': 404,
  'unknown-site': 404,
  unsupported: 400,
  'unsupported-content-type': 415,
  'unsupported-op': 400,
  'unterminated-expression': 400,
  'unterminated-string': 400,
  'vault-not-shared': 403,
  'wrong-arity': 400,
  'wrong-key': 400,
  'x-field': 400,
  'x-json-patch-fields': 400,
  'x-json-patch-op': 400,
  'x-path-outside': 400,
} as const satisfies Record<string, number>;

export type DetailCode = keyof typeof errorDetails;

/** Every code `error-info` can carry (general and specific) with its status, sorted by code. */
export const infoCodes: ReadonlyArray<readonly [code: ErrorCode | DetailCode, status: number]> = [
  ...new Map<ErrorCode | DetailCode, number>([...Object.entries(errorStatus), ...Object.entries(errorDetails)] as Array<
    [ErrorCode | DetailCode, number]
  >),
].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

/**
 * What an ApiError knows beyond its message: `code` is rendered as `error-info` (the string a
 * program matches on); every other member (where the problem is) goes in `error-details`.
 */
export type ErrorInfo = {
  code?: DetailCode;
  path?: string;
  position?: number | [number, number];
  'x-path'?: string;
  [key: string]: unknown;
};

/** The detail codes that may go with `C`: those whose status is the status of `C`. */
export type DetailFor<C extends ErrorCode> = {
  [D in DetailCode]: (typeof errorDetails)[D] extends (typeof errorStatus)[C] ? D : never;
}[DetailCode];

/** True when `detail` may go with `code` (it has the same HTTP status). */
export function goesWith<C extends ErrorCode>(detail: DetailCode | undefined, code: C): detail is DetailFor<C> {
  return detail !== undefined && errorDetails[detail] === errorStatus[code];
}

/** Constructor arguments: the detail code in `info` must have the same HTTP status as `code`. */
export type ApiErrorArgs = {
  [C in ErrorCode]: [
    code: C,
    message: string,
    info?: ErrorInfo & { code?: DetailFor<C> },
    opts?: { more?: ApiError[]; headers?: Record<string, string> },
  ];
}[ErrorCode];

export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly info: ErrorInfo | undefined;
  /** Further problems reported in the same reply (validate lists every problem). */
  readonly more: ApiError[];
  readonly headers: Record<string, string>;

  constructor(...[code, message, info, opts]: ApiErrorArgs) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    this.info = info;
    this.more = opts?.more ?? [];
    this.headers = opts?.headers ?? {};
  }

  /** The same error (code, detail code, headers) with another message and more detail. */
  rewrap(message: string, info: { code?: never; [key: string]: unknown }): ApiError {
    const args = [this.code, message, { ...this.info, ...info }, { headers: this.headers }] as ApiErrorArgs;
    return new ApiError(...args);
  }

  get status(): number {
    return errorStatus[this.code];
  }

  /** The code a program matches on: the specific one when there is one, else the general one. */
  get infoCode(): DetailCode | ErrorCode {
    return this.info?.code ?? this.code;
  }

  /** Where the problem is (field, path, position...): `info` without its code; undefined when empty. */
  get details(): Record<string, unknown> | undefined {
    if (!this.info) return undefined;
    const { code: _code, ...rest } = this.info;
    return Object.keys(rest).length > 0 ? rest : undefined;
  }

  /** This error (not `more`) as one entry of an error body. */
  toEntry(): ErrorEntry {
    const details = this.details;
    const message = capped(this.message, maxMessageChars);
    return details
      ? { 'error-message': message, 'error-info': this.infoCode, 'error-details': cappedDetails(details) }
      : { 'error-message': message, 'error-info': this.infoCode };
  }

  /** The error body: {errors: [{error-message, error-info, error-details?}]}, this error and `more`. */
  toBody(): ErrorBody {
    return { errors: [this as ApiError, ...this.more].map((e) => e.toEntry()) };
  }
}

/**
 * Error texts quote what the client sent (a path, a name, a field): an error never grows with
 * the input. A message is cut at 2,000 characters and each text of its details at 500, saying
 * how long it was.
 */
const maxMessageChars = 2000;
const maxDetailChars = 500;

function capped(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length} characters)`;
}

function cappedDetails(details: Record<string, unknown>): Record<string, unknown> {
  let out: Record<string, unknown> | undefined;
  for (const [k, v] of Object.entries(details))
    if (typeof v === 'string' && v.length > maxDetailChars) (out ??= { ...details })[k] = capped(v, maxDetailChars);
  return out ?? details;
}

/** One entry of an error body (CONTRACT §5): `error-info` is the code as a string. */
export type ErrorEntry = {
  'error-message': string;
  'error-info': string;
  'error-details'?: Record<string, unknown>;
};

export type ErrorBody = { errors: ErrorEntry[] };

/** Several problems at once (validate, schema checks): one 400 listing all of them. */
export function combine(errors: ApiError[]): ApiError {
  const [first, ...rest] = errors;
  if (!first) return new ApiError('internal', 'combine() called with no errors');
  if (rest.length === 0) return first;
  const args = [first.code, first.message, first.info, { more: [...first.more, ...rest] }] as ApiErrorArgs;
  return new ApiError(...args);
}
