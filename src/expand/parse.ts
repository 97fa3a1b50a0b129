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
  return new TemplateParser(text, field).parse();
}

const argumentEnd = /[ \t\r\n|}]/;

/** A recursive-descent parser over `text`; `i` is the offset it has read up to. */
class TemplateParser {
  private i = 0;

  constructor(
    private readonly text: string,
    private readonly field: string,
  ) {}

  /** Literals and expressions, adjacent literals merged. */
  parse(): Part[] {
    const { text } = this;
    const parts: Part[] = [];
    let literal = '';
    while (this.i < text.length) {
      const i = this.i;
      const ch = text[i];
      if (ch === '$' && text[i + 1] === '$' && text[i + 2] === '{') {
        literal += '${';
        this.i += 3;
      } else if (ch === '$' && text[i + 1] === '{') {
        this.i += 2;
        const expr = this.expression(i);
        if (literal !== '') parts.push(literal);
        literal = '';
        parts.push(expr);
      } else {
        literal += ch;
        this.i++;
      }
    }
    if (literal !== '') parts.push(literal);
    return parts;
  }

  private fail(code: SyntaxCode, message: string, position: number): never {
    throw syntaxError(code, message, position, this.field);
  }

  private unterminated(open: number): never {
    return this.fail('unterminated-expression', "'${' is not closed by '}'", open);
  }

  private skipSpace(): void {
    while (this.i < this.text.length && space.test(this.text[this.i] ?? '')) this.i++;
  }

  private take(re: RegExp): string {
    const from = this.i;
    while (this.i < this.text.length && re.test(this.text[this.i] ?? '')) this.i++;
    return this.text.slice(from, this.i);
  }

  /** After `${` (i is past it); returns with i past the closing `}`. */
  private expression(open: number): Expr {
    this.skipSpace();
    const position = this.i;
    let variable = this.take(nameChar);
    if (variable === '') {
      if (this.i >= this.text.length) this.unterminated(open);
      this.fail('expected-variable', 'expected a variable name after "${"', this.i);
    }
    if (this.text[this.i] === '[') variable = `${variable}[${this.index(open, variable)}]`;
    const calls: Call[] = [];
    for (;;) {
      this.skipSpace();
      const ch = this.text[this.i];
      if (ch === undefined) return this.unterminated(open);
      if (ch === '}') {
        this.i++;
        return { variable, position, calls, start: open, end: this.i };
      }
      if (ch !== '|')
        return this.fail('unexpected-character', `expected '|' or '}', found ${JSON.stringify(ch)}`, this.i);
      this.i++;
      calls.push(this.call(open));
    }
  }

  /** On the `[` after a variable name; returns its index with i past the `]`. */
  private index(open: number, variable: string): string {
    const bracket = this.i++;
    const index = this.take(indexChar);
    if (this.text[this.i] !== ']') {
      if (this.i >= this.text.length) this.unterminated(open);
      this.fail('unexpected-character', `expected ']' to close the index opened at position ${bracket}`, this.i);
    }
    if (index === '') this.fail('missing-index', `${variable}[] needs a name inside the brackets`, bracket);
    this.i++;
    return index;
  }

  /** After `|`; returns with i on the `|` or `}` that ends the call. */
  private call(open: number): Call {
    this.skipSpace();
    const position = this.i;
    const name = this.take(functionChar);
    if (name === '') {
      if (this.i >= this.text.length) this.unterminated(open);
      this.fail('expected-function', "expected a function name after '|'", this.i);
    }
    const args: Arg[] = [];
    for (;;) {
      const before = this.i;
      this.skipSpace();
      const ch = this.text[this.i];
      if (ch === undefined) return this.unterminated(open);
      if (ch === '|' || ch === '}') return { name, position, args };
      if (before === this.i)
        this.fail('unexpected-character', `expected a space before the argument, found ${JSON.stringify(ch)}`, this.i);
      args.push(this.argument());
    }
  }

  private argument(): Arg {
    const position = this.i;
    const quote = this.text[this.i];
    if (quote !== '"' && quote !== "'") {
      while (this.i < this.text.length && !argumentEnd.test(this.text[this.i] ?? '')) this.i++;
      return { value: this.text.slice(position, this.i), position, start: position, quoted: false };
    }
    this.i++;
    return this.quoted(quote, position);
  }

  /** After the opening quote of a string; returns with i past the closing one. */
  private quoted(quote: '"' | "'", position: number): Arg {
    const { text } = this;
    let value = '';
    for (;;) {
      const ch = text[this.i];
      if (ch === undefined)
        return this.fail('unterminated-string', `the string opened by ${quote} is not closed`, position);
      if (quote === '"' && ch === '\\' && (text[this.i + 1] === '"' || text[this.i + 1] === '\\')) {
        value += text[this.i + 1];
        this.i += 2;
      } else if (quote === "'" && ch === "'" && text[this.i + 1] === "'") {
        value += "'";
        this.i += 2;
      } else if (ch === quote) {
        this.i++;
        const next = text[this.i];
        if (next !== undefined && !argumentEnd.test(next))
          this.fail(
            'unexpected-character',
            `expected a space, '|' or '}' after the string, found ${JSON.stringify(next)}`,
            this.i,
          );
        return { value, position, start: position + 1, quoted: true };
      } else {
        value += ch;
        this.i++;
      }
    }
  }
}
