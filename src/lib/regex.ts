/**
 * Every user regular expression goes through here: compiled once, when the
 * configuration or query is written, with re2js (linear time). PCRE-only constructs are
 * rejected with their name and position; other syntax errors carry re2js's reason.
 */
import { RE2JS } from 're2js';
import { ApiError } from './errors.js';
import { errorText } from './error-text.js';

export type Regex = {
  readonly source: string;
  /** True when the pattern is made only of characters that match themselves: it matches where `source` occurs. */
  readonly literal: boolean;
  /** True when the pattern matches anywhere in `text`. */
  test(text: string): boolean;
  /** Every match replaced by `replacement` ($1, ${name} refer to groups). */
  replaceAll(text: string, replacement: string): string;
};

/** PCRE constructs RE2 lacks, found before re2js sees the pattern so the 400 can name them. */
const unsupported: Array<[RegExp, string]> = [
  [/^\(\?<?[=!]/, 'lookaround'],
  [/^\(\?>/, 'atomic group'],
  [/^\\[1-9]/, 'backreference'],
  [/^\\[gk][<{'0-9-]/, 'backreference'],
  [/^(?:[*+?]|\{\d+(?:,\d*)?\})\+/, 'possessive quantifier'],
  [/^\(\?[0-9R&]/, 'recursion or subroutine call'],
  [/^\(\?\(/, 'conditional group'],
  // RE2 has \A and \z (start and end of text); PCRE's \G and \Z it has not.
  [/^\\G/, 'anchor \\G'],
  [/^\\Z/, 'anchor \\Z (use \\z, or $ without the m flag)'],
];

export type RegexProblem = { construct: string; position: number; reason: string };

/** Returns the first unsupported construct, or undefined. Skips escaped and bracketed text. */
export function findUnsupported(pattern: string): RegexProblem | undefined {
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i];
    const rest = pattern.slice(i);
    if (!inClass) {
      for (const [re, construct] of unsupported) {
        if (re.test(rest))
          return { construct, position: i, reason: `${construct} is not supported (linear-time engine)` };
      }
    }
    if (ch === '\\') {
      i++;
      continue;
    }
    if (inClass) {
      if (ch === ']') inClass = false;
      continue;
    }
    if (ch === '[') {
      inClass = true;
      if (pattern[i + 1] === '^') i++;
      if (pattern[i + 1] === ']') i++;
    }
  }
  return undefined;
}

/** Patterns made only of characters that match themselves. */
const literal = /^[^\\.+*?()|[\]{}^$]*$/;

/** Position of a re2js error: where its quoted fragment starts in the pattern, else 0. */
function errorPosition(pattern: string, message: string): number {
  const m = /`([^`]*)`\s*$/.exec(message);
  if (!m || m[1] === undefined) return 0;
  const at = pattern.indexOf(m[1]);
  return at < 0 ? 0 : at;
}

/**
 * Compile or throw ApiError('invalid-value') whose info says {code, position, path}.
 * `where` names the field or parameter, for the message.
 */
export function compileRegex(pattern: string, where: string): Regex {
  const bad = findUnsupported(pattern);
  if (bad) {
    throw new ApiError(
      'invalid-value',
      `Cannot use ${JSON.stringify(pattern)} as a regular expression in ${where}: ${bad.reason} at position ${bad.position}`,
      {
        code: 'regex-unsupported',
        construct: bad.construct,
        position: bad.position,
        path: where,
      },
    );
  }
  let re: RE2JS;
  try {
    re = RE2JS.compile(pattern);
  } catch (err) {
    const reason = errorText(err).replace(/^error parsing regexp: /, '');
    const position = errorPosition(pattern, reason);
    throw new ApiError(
      'invalid-value',
      `Cannot use ${JSON.stringify(pattern)} as a regular expression in ${where}: ${reason}`,
      {
        code: 'regex-syntax',
        position,
        path: where,
      },
    );
  }
  const isLiteral = literal.test(pattern);
  return {
    source: pattern,
    literal: isLiteral,
    // A pattern without metacharacters matches where its text occurs: a substring search is
    // the same answer several times faster than the matcher (filters run on every message).
    test: isLiteral ? (text) => text.includes(pattern) : (text) => re.matcher(text).find(),
    replaceAll: (text, replacement) => re.matcher(text).replaceAll(replacement),
  };
}
