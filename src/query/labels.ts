/**
 * Label expressions, used by site placement, application deployments and the
 * `match-labels()` function of `where`:
 *
 *   or   := and ('or' and)*
 *   and  := unary ('and' unary)*
 *   unary:= 'not' unary | '!' key | '(' or ')' | key (('=' | '!=') value | 'in' set | 'not' 'in' set)?
 *   set  := '{' (value (',' value)*)? '}'
 *
 * Keys and values are unquoted tokens (anything but blanks and `=!(){},'"`, so `system/type`,
 * `a.b-c_d` work) or quoted strings. Compiled once into closures; matching allocates nothing.
 * `!=` and `not in` also hold when the key is absent (as Kubernetes selectors do), so
 * `env != prod` selects every site not labelled prod.
 *
 * `not` and parentheses nest at most MAX_LABEL_DEPTH levels (README "Limits"); deeper is a 400
 * `too-deep` at the position where the limit is passed, never a stack overflow.
 */
import { ApiError, type DetailFor } from '../lib/errors.js';
import { MAX_LABEL_DEPTH } from './limits.js';

export type Labels = Readonly<Record<string, string | readonly string[]>>;
export type LabelMatcher = { readonly source: string; test(labels: Labels): boolean };

type Token =
  | { kind: 'word'; text: string; pos: number; quoted: boolean }
  | { kind: 'op'; text: '=' | '!=' | '!' | '(' | ')' | '{' | '}' | ','; pos: number }
  | { kind: 'end'; pos: number };

type Test = (labels: Labels) => boolean;

function fail(code: DetailFor<'invalid-value'>, position: number, message: string): ApiError {
  return new ApiError('invalid-value', `Cannot use this label expression: ${message} (at position ${position})`, {
    code,
    position,
  });
}

const stop = /[\s=!(){},'"]/;

function lex(text: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const ch = text.charAt(i);
    if (/\s/.test(ch)) {
      i++;
      continue;
    }
    if (ch === '!' && text.charAt(i + 1) === '=') {
      out.push({ kind: 'op', text: '!=', pos: i });
      i += 2;
      continue;
    }
    if (ch === '=' || ch === '!' || ch === '(' || ch === ')' || ch === '{' || ch === '}' || ch === ',') {
      out.push({ kind: 'op', text: ch, pos: i });
      i++;
      continue;
    }
    if (ch === '"' || ch === "'") {
      let value = '';
      let j = i + 1;
      for (;;) {
        if (j >= text.length) throw fail('unterminated-string', i, 'the quoted string is not closed');
        const c = text.charAt(j);
        if (c === '\\' && j + 1 < text.length) {
          value += text.charAt(j + 1);
          j += 2;
          continue;
        }
        if (c === ch) break;
        value += c;
        j++;
      }
      out.push({ kind: 'word', text: value, pos: i, quoted: true });
      i = j + 1;
      continue;
    }
    let j = i;
    while (j < text.length && !stop.test(text.charAt(j))) j++;
    out.push({ kind: 'word', text: text.slice(i, j), pos: i, quoted: false });
    i = j;
  }
  out.push({ kind: 'end', pos: text.length });
  return out;
}

/** Own keys only: `constructor` or `__proto__` must not be found on Object.prototype. */
function get(l: Labels, key: string): string | readonly string[] | undefined {
  return Object.hasOwn(l, key) ? l[key] : undefined;
}

function hasValue(v: string | readonly string[] | undefined, wanted: string): boolean {
  if (v === undefined) return false;
  if (typeof v === 'string') return v === wanted;
  return v.includes(wanted);
}

function hasAny(v: string | readonly string[] | undefined, set: ReadonlySet<string>): boolean {
  if (v === undefined) return false;
  if (typeof v === 'string') return set.has(v);
  for (const x of v) if (set.has(x)) return true;
  return false;
}

class Parser {
  private i = 0;
  /** `not`s and parentheses open at the current token. */
  private depth = 0;
  constructor(private readonly toks: Token[]) {}

  private enter(pos: number): void {
    if (++this.depth > MAX_LABEL_DEPTH)
      throw fail('too-deep', pos, `'not' and parentheses nest deeper than ${MAX_LABEL_DEPTH} levels`);
  }

  private peek(): Token {
    return this.toks[this.i] ?? { kind: 'end', pos: 0 };
  }

  private isKeyword(word: string): boolean {
    const t = this.peek();
    return t.kind === 'word' && !t.quoted && t.text === word;
  }

  private isOp(op: string): boolean {
    const t = this.peek();
    return t.kind === 'op' && t.text === op;
  }

  private expectOp(op: string, what: string): void {
    if (!this.isOp(op)) throw this.unexpected(what);
    this.i++;
  }

  private unexpected(what: string): ApiError {
    const t = this.peek();
    const seen = t.kind === 'end' ? 'the end' : `'${t.text}'`;
    return fail('syntax', t.pos, `expected ${what}, found ${seen}`);
  }

  /** A key or a value, i.e. a word, except that bare keywords are not keys. */
  private word(what: string): string {
    const t = this.peek();
    if (t.kind !== 'word') throw this.unexpected(what);
    this.i++;
    return t.text;
  }

  parse(): Test {
    if (this.peek().kind === 'end') throw fail('empty', 0, 'the expression is empty');
    const test = this.or();
    if (this.peek().kind !== 'end') throw this.unexpected("'and', 'or' or the end");
    return test;
  }

  private or(): Test {
    const parts = [this.and()];
    while (this.isKeyword('or')) {
      this.i++;
      parts.push(this.and());
    }
    if (parts.length === 1 && parts[0]) return parts[0];
    return (l) => {
      for (const p of parts) if (p(l)) return true;
      return false;
    };
  }

  private and(): Test {
    const parts = [this.unary()];
    while (this.isKeyword('and')) {
      this.i++;
      parts.push(this.unary());
    }
    if (parts.length === 1 && parts[0]) return parts[0];
    return (l) => {
      for (const p of parts) if (!p(l)) return false;
      return true;
    };
  }

  private unary(): Test {
    if (this.isKeyword('not')) {
      this.enter(this.peek().pos);
      this.i++;
      const inner = this.unary();
      this.depth--;
      return (l) => !inner(l);
    }
    if (this.isOp('!')) {
      this.i++;
      const key = this.word('a label key after !');
      return (l) => get(l, key) === undefined;
    }
    if (this.isOp('(')) {
      this.enter(this.peek().pos);
      this.i++;
      const inner = this.or();
      this.expectOp(')', "')'");
      this.depth--;
      return inner;
    }
    const t = this.peek();
    if (t.kind === 'word' && !t.quoted && (t.text === 'and' || t.text === 'or' || t.text === 'in'))
      throw this.unexpected('a label key');
    const key = this.word('a label key');
    return this.condition(key);
  }

  private condition(key: string): Test {
    if (this.isOp('=')) {
      this.i++;
      const value = this.word('a label value');
      return (l) => hasValue(get(l, key), value);
    }
    if (this.isOp('!=')) {
      this.i++;
      const value = this.word('a label value');
      return (l) => !hasValue(get(l, key), value);
    }
    if (this.isKeyword('in')) {
      this.i++;
      const set = this.set();
      return (l) => hasAny(get(l, key), set);
    }
    if (this.isKeyword('not')) {
      this.i++;
      if (!this.isKeyword('in')) throw this.unexpected("'in' after 'not'");
      this.i++;
      const set = this.set();
      return (l) => !hasAny(get(l, key), set);
    }
    return (l) => get(l, key) !== undefined;
  }

  private set(): Set<string> {
    this.expectOp('{', "'{'");
    const values = new Set<string>();
    if (this.isOp('}')) {
      this.i++;
      return values;
    }
    for (;;) {
      values.add(this.word('a label value'));
      if (this.isOp('}')) {
        this.i++;
        return values;
      }
      this.expectOp(',', "',' or '}'");
    }
  }
}

/** Compile once; throws ApiError('invalid-value') with {code, position} (callers add `path`). */
export function compileLabelExpr(text: string): LabelMatcher {
  const test = new Parser(lex(text)).parse();
  return { source: text, test };
}
