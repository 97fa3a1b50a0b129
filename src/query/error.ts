/**
 * One constructor for every 400 a query parameter can cause, so each has the same shape:
 * `error-info` its code, `error-details` {position, parameter}. `position` is a 0-based character offset into the
 * parameter's value, so a client can put a caret under the problem.
 */
import { ApiError, goesWith, type DetailFor } from '../lib/errors.js';

export type QueryParameterName = 'fields' | 'where' | 'match-path' | (string & {});

export function queryError(
  parameter: QueryParameterName,
  code: DetailFor<'invalid-query'>,
  position: number,
  message: string,
  extra?: Record<string, unknown>,
): ApiError {
  return new ApiError('invalid-query', `Cannot use the ${parameter} parameter: ${message} (at position ${position})`, {
    ...extra,
    code,
    position,
    parameter,
  });
}

/** Reads the `code` and `position` of an ApiError raised by a nested parser (regex, labels). */
export function innerProblem(
  err: unknown,
): { code: DetailFor<'invalid-query'>; position: number; message: string } | undefined {
  if (!(err instanceof ApiError)) return undefined;
  const inner = err.info?.code;
  const code = goesWith(inner, 'invalid-query') ? inner : 'syntax';
  const position = typeof err.info?.position === 'number' ? err.info.position : 0;
  return { code, position, message: err.message };
}
