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
  'precondition-failed': 412,
  'payload-too-large': 413,
  'unsupported-media-type': 415,
  'too-many-requests': 429,
  internal: 500,
  sealed: 503,
  unavailable: 503,
} as const satisfies Record<string, number>;

export type ErrorCode = keyof typeof errorStatus;

/** Machine-readable detail put in `error-info`: where the problem is. */
export type ErrorInfo = {
  code?: string;
  path?: string;
  position?: number | [number, number];
  'x-path'?: string;
  [key: string]: unknown;
};

export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly info: ErrorInfo | undefined;
  /** Further problems reported in the same reply (validate lists every problem). */
  readonly more: ApiError[];
  readonly headers: Record<string, string>;

  constructor(
    code: ErrorCode,
    message: string,
    info?: ErrorInfo,
    opts?: { more?: ApiError[]; headers?: Record<string, string> },
  ) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    this.info = info;
    this.more = opts?.more ?? [];
    this.headers = opts?.headers ?? {};
  }

  get status(): number {
    return errorStatus[this.code];
  }

  /** The body of seed section 7: {errors: [{error-message, error-info}]}. */
  toBody(): { errors: Array<{ 'error-message': string; 'error-info'?: ErrorInfo }> } {
    const all = [this as ApiError, ...this.more];
    return {
      errors: all.map((e) =>
        e.info ? { 'error-message': e.message, 'error-info': e.info } : { 'error-message': e.message },
      ),
    };
  }
}

/** Several problems at once (validate, schema checks): one 400 listing all of them. */
export function combine(errors: ApiError[]): ApiError {
  const [first, ...rest] = errors;
  if (!first) return new ApiError('internal', 'combine() called with no errors');
  if (rest.length === 0) return first;
  return new ApiError(first.code, first.message, first.info, { more: [...first.more, ...rest] });
}
