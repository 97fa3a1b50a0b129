/**
 * Durations in configuration: a whole number and a unit, `250ms`, `1s`, `5m`, `1h`. A
 * fraction (`1.5s`), a sign, a space or another unit is not a duration. The schema pattern,
 * the write-time checks and the exporter all use this one rule. Settings of the environment
 * (lib/settings.ts) use it with days (`7d`) besides.
 */
import { ApiError } from './errors.js';

const units = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** The rule as a JSON Schema pattern. */
export const durationPattern = '^[0-9]+(ms|s|m|h)$';
const durationRe = /^([0-9]+)(ms|s|m|h)$/;

/** Milliseconds, or undefined when the text is not a duration. */
export function durationMs(text: string): number | undefined {
  const m = durationRe.exec(text);
  return m ? Number(m[1]) * units[m[2] as keyof typeof units] : undefined;
}

/** Milliseconds of an environment setting's duration (the rule above, `d` allowed), or undefined. */
export function settingDurationMs(text: string): number | undefined {
  const m = /^([0-9]+)(ms|s|m|h|d)$/.exec(text);
  return m ? Number(m[1]) * units[m[2] as keyof typeof units] : undefined;
}

/**
 * The longest duration in configuration: 576h (24 days). Node's timers wait at most 2^31 − 1 ms
 * (about 24.8 days) and fire a longer wait at once: a longer retry-interval retried in a loop.
 */
export const maxDurationMs = 576 * units.h;

/** The 400 of a duration above maxDurationMs, naming the field; undefined when within it (or not a duration). */
export function durationTooLong(text: string, field: string): ApiError | undefined {
  const ms = durationMs(text);
  if (ms === undefined || ms <= maxDurationMs) return undefined;
  return new ApiError('invalid-value', `Cannot use ${JSON.stringify(text)} as ${field}: at most 576h (24 days)`, {
    code: 'invalid-duration',
    path: field,
  });
}

/** Milliseconds; a text that is not a duration, or one above maxDurationMs, is a 400 naming the field. */
export function parseDuration(text: string, field: string): number {
  const ms = durationMs(text);
  if (ms === undefined) {
    throw new ApiError(
      'invalid-value',
      `Cannot use ${JSON.stringify(text)} as ${field}: write a whole number and a unit (ms, s, m, h), e.g. 250ms or 5m`,
      { code: 'invalid-duration', path: field, position: 0 },
    );
  }
  const long = durationTooLong(text, field);
  if (long) throw long;
  return ms;
}
