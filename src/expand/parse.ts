/**
 * Syntax of variable expressions: template text → a flat list of literal strings and
 * `${VAR | fn arg... | fn arg...}` expressions. Only syntax is checked here; functions and
 * variables are resolved by template.ts. Every error is an ApiError('invalid-value') whose info
 * is {code, position, path}: `position` is the 0-based offset in the template text.
 *
 * Literal text rules:
 * - `$${` is a literal `${` (the only escape);
 * - any other `$` is literal, so `$$` stays `$$` and `$x` stays `$x`;
 * - braces outside `${...}` are literal (JSON bodies need no escaping).
 *
 * Arguments: unquoted (up to a space, '|' or '}'); double-quoted, where `\"` and `\\` are
 * escapes and any other backslash is kept as is (so `"\d+"` is the regex `\d+`); single-quoted,
 * where `''` is one quote and nothing else is special.
 */
import { ApiError, type DetailFor } from '../lib/errors.js';

export type SyntaxCode =
  | 'unterminated-expression'
  | 'unterminated-string'
  | 'expected-variable'
  | 'expected-function'
  | 'missing-index'
  | 'unexpected-character';

/** One function argument. `start` is where its text begins (after an opening quote). */
export type Arg = {
  readonly value: string;
  readonly position: number;
  readonly start: number;
  readonly quoted: boolean;
};
export type Call = { readonly name: string; readonly position: number; readonly args: readonly Arg[] };
/**
 * `variable` is the full name, index included: `SYS_DNS_ZONES[default]`. `start` and `end` are
 * the offsets of its `${` and just past its `}` in the template text.
 */
export type Expr = {
  readonly variable: string;
  readonly position: number;
  readonly calls: readonly Call[];
  readonly start: number;
  readonly end: number;
};
/** Adjacent literals are merged, so literals and expressions alternate. */
export type Part = string | Expr;

const nameChar = /[A-Za-z0-9_]/;
const functionChar = /[A-Za-z0-9_-]/;
/** Index of `SYS_DNS_ZONES[...]`/`SYS_SITE_LABELS[...]`: zone and label names (`system/name`, `app.io/role`). */
const indexChar = /[A-Za-z0-9_.\/:@-]/;
const space = /[ \t\r\n]/;

export function syntaxError(
  code: DetailFor<'invalid-value'>,
  message: string,
  position: number,
  field: string,
): ApiError {
  return new ApiError(
    'invalid-value',
    `Cannot use the value of ${field} as a variable expression: ${message} at position ${position}`,
    {
      code,
      position,
      path: field,
    },
  );
}

export function parseTemplate(text: string, field: string): Part[] {
  const parts: Part[] = [];
  let literal = '';
  let i = 0;

  const fail = (code: SyntaxCode, message: string, position: number): never => {
    throw syntaxError(code, message, position, field);
  };
  const skipSpace = (): void => {
    while (i < text.length && space.test(text[i] ?? '')) i++;
  };
  const take = (re: RegExp): string => {
    const from = i;
    while (i < text.length && re.test(text[i] ?? '')) i++;
    return text.slice(from, i);
  };

  /** After `${` (i is past it); returns with i past the closing `}`. */
  const expression = (open: number): Expr => {
    skipSpace();
    const position = i;
    let variable = take(nameChar);
    if (variable === '') {
      if (i >= text.length) fail('unterminated-expression', "'${' is not closed by '}'", open);
      fail('expected-variable', 'expected a variable name after "${"', i);
    }
    if (text[i] === '[') {
      const bracket = i++;
      const index = take(indexChar);
      if (text[i] !== ']') {
        if (i >= text.length) fail('unterminated-expression', "'${' is not closed by '}'", open);
        fail('unexpected-character', `expected ']' to close the index opened at position ${bracket}`, i);
      }
      if (index === '') fail('missing-index', `${variable}[] needs a name inside the brackets`, bracket);
      i++;
      variable = `${variable}[${index}]`;
    }
    const calls: Call[] = [];
    for (;;) {
      skipSpace();
      const ch = text[i];
      if (ch === undefined) return fail('unterminated-expression', "'${' is not closed by '}'", open);
      if (ch === '}') {
        i++;
        return { variable, position, calls, start: open, end: i };
      }
      if (ch !== '|') return fail('unexpected-character', `expected '|' or '}', found ${JSON.stringify(ch)}`, i);
      i++;
      calls.push(call(open));
    }
  };

  /** After `|`; returns with i on the `|` or `}` that ends the call. */
  const call = (open: number): Call => {
    skipSpace();
    const position = i;
    const name = take(functionChar);
    if (name === '') {
      if (i >= text.length) fail('unterminated-expression', "'${' is not closed by '}'", open);
      fail('expected-function', "expected a function name after '|'", i);
    }
    const args: Arg[] = [];
    for (;;) {
      const before = i;
      skipSpace();
      const ch = text[i];
      if (ch === undefined) return fail('unterminated-expression', "'${' is not closed by '}'", open);
      if (ch === '|' || ch === '}') return { name, position, args };
      if (before === i)
        fail('unexpected-character', `expected a space before the argument, found ${JSON.stringify(ch)}`, i);
      args.push(argument());
    }
  };

  const argument = (): Arg => {
    const position = i;
    const quote = text[i];
    if (quote !== '"' && quote !== "'") {
      while (i < text.length && !/[ \t\r\n|}]/.test(text[i] ?? '')) i++;
      return { value: text.slice(position, i), position, start: position, quoted: false };
    }
    i++;
    let value = '';
    for (;;) {
      const ch = text[i];
      if (ch === undefined) return fail('unterminated-string', `the string opened by ${quote} is not closed`, position);
      if (quote === '"' && ch === '\\' && (text[i + 1] === '"' || text[i + 1] === '\\')) {
        value += text[i + 1];
        i += 2;
      } else if (quote === "'" && ch === "'" && text[i + 1] === "'") {
        value += "'";
        i += 2;
      } else if (ch === quote) {
        i++;
        const next = text[i];
        if (next !== undefined && !/[ \t\r\n|}]/.test(next)) {
          fail(
            'unexpected-character',
            `expected a space, '|' or '}' after the string, found ${JSON.stringify(next)}`,
            i,
          );
        }
        return { value, position, start: position + 1, quoted: true };
      } else {
        value += ch;
        i++;
      }
    }
  };

  while (i < text.length) {
    const ch = text[i];
    if (ch === '$' && text[i + 1] === '$' && text[i + 2] === '{') {
      literal += '${';
      i += 3;
    } else if (ch === '$' && text[i + 1] === '{') {
      const open = i;
      i += 2;
      const expr = expression(open);
      if (literal !== '') parts.push(literal);
      literal = '';
      parts.push(expr);
    } else {
      literal += ch;
      i++;
    }
  }
  if (literal !== '') parts.push(literal);
  return parts;
}
