/**
 * Expansion functions. Each one is checked and prepared once, when the template is
 * compiled (arity, integers, regexes), and yields a plain `string → string` step for the
 * per-message render loop. No step can throw.
 *
 * - `indent N`: N spaces before every line, the first one and empty ones included (the result
 *   is meant to be placed at the start of a line, as in YAML bodies). N is 0..1000.
 * - `replace PATTERN REPLACEMENT`: every match of PATTERN (compiled with compileRegex, RE2
 *   syntax) is replaced. REPLACEMENT follows String.prototype.replace: `$1`..`$99` and `$<name>`
 *   are groups, `$&` the match, `` $` `` and `$'` the text before and after it, `$$` a dollar
 *   sign; a reference to a missing group stays literal.
 * - `squote`, `dquote`: wrap in ' or ". Inner quotes are NOT escaped: the function wraps, and
 *   the right escape depends on where the text goes (JSON, shell, YAML); use `replace` first.
 * - `quote`: like dquote, unless the value is already wrapped in a pair of ' or ".
 * - `json` (an extension): the value as a JSON string literal, quotes included and `"`, `\`
 *   and control characters escaped, so any value can be placed in a JSON body.
 * - `urlencode` (an extension): the value percent-encoded as one URL component
 *   (encodeURIComponent: `/`, `?`, `#`, `&`, `%` and spaces too), so a value placed in `url`
 *   stays one path segment or one query value; a lone surrogate, which has no UTF-8, becomes U+FFFD.
 */
import { ApiError } from '../lib/errors.js';
import { compileRegex } from '../lib/regex.js';
import type { Arg, Call } from './parse.js';
import { syntaxError } from './parse.js';

export type Step = (value: string) => string;

type FunctionDef = {
  readonly args: readonly string[];
  prepare(args: readonly Arg[], field: string): Step;
};

const maxIndent = 1000;

function integerArg(arg: Arg, field: string): number {
  const n = /^\d+$/.test(arg.value) ? Number(arg.value) : NaN;
  if (!Number.isSafeInteger(n) || n > maxIndent) {
    throw syntaxError(
      'invalid-integer',
      `indent needs an integer from 0 to ${maxIndent}, found ${JSON.stringify(arg.value)}`,
      arg.position,
      field,
    );
  }
  return n;
}

/**
 * compileRegex reports a position in the pattern; the client needs one in the template text.
 * Exact for unquoted and escape-free quoted patterns; after a `\"` or `\\` escape it is off by one per escape.
 */
function regexArg(arg: Arg, field: string): ReturnType<typeof compileRegex> {
  try {
    return compileRegex(arg.value, `${field} (replace pattern)`);
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    const inPattern = typeof err.info?.position === 'number' ? err.info.position : 0;
    throw err.rewrap(err.message, { position: arg.start + inPattern, path: field });
  }
}

const isWrapped = (v: string): boolean => v.length >= 2 && (v[0] === '"' || v[0] === "'") && v[v.length - 1] === v[0];

export const functions = {
  indent: {
    args: ['N'],
    prepare([n], field) {
      const pad = ' '.repeat(n ? integerArg(n, field) : 0);
      return (v) => pad + v.replaceAll('\n', '\n' + pad);
    },
  },
  replace: {
    args: ['PATTERN', 'REPLACEMENT'],
    prepare([pattern, replacement], field) {
      if (!pattern || !replacement) throw new ApiError('internal', 'replace prepared without its arguments');
      const re = regexArg(pattern, field);
      const substitute = replacement.value;
      return (v) => re.replaceAll(v, substitute);
    },
  },
  squote: { args: [], prepare: () => (v) => `'${v}'` },
  dquote: { args: [], prepare: () => (v) => `"${v}"` },
  quote: { args: [], prepare: () => (v) => (isWrapped(v) ? v : `"${v}"`) },
  json: { args: [], prepare: () => (v) => JSON.stringify(v) },
  urlencode: { args: [], prepare: () => urlencode },
} as const satisfies Record<string, FunctionDef>;

const table: Readonly<Record<string, FunctionDef>> = functions;

const loneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** encodeURIComponent, which throws on a lone surrogate: that one becomes U+FFFD (no step may throw). */
function urlencode(v: string): string {
  try {
    return encodeURIComponent(v);
  } catch {
    return encodeURIComponent(v.replace(loneSurrogate, '\uFFFD'));
  }
}

/** Checks one parsed call and returns its step; unknown names and wrong arity are 400s. */
export function prepareCall(call: Call, field: string): Step {
  const def = Object.hasOwn(table, call.name) ? table[call.name] : undefined;
  if (!def) {
    const known = Object.keys(table).join(', ');
    throw syntaxError(
      'unknown-function',
      `unknown function ${JSON.stringify(call.name)} (known: ${known})`,
      call.position,
      field,
    );
  }
  if (call.args.length !== def.args.length) {
    const usage = [call.name, ...def.args].join(' ');
    const at = call.args[def.args.length]?.position ?? call.position;
    throw syntaxError(
      'wrong-arity',
      `${call.name} takes ${def.args.length} argument(s) (${usage}), found ${call.args.length}`,
      at,
      field,
    );
  }
  return def.prepare(call.args, field);
}
