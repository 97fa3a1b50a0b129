/**
 * Tokens of the `where` language (XPath 1.0 §3.7). Two XPath rules decide what a token is:
 * - names may contain '-' and '.', so `connection-state` and `a-b` are single names and a
 *   subtraction needs blanks (`a - b`) or a non-name left side (`3-1`);
 * - after a token that ends an operand (name, number, literal, ')', ']', '.', '..') the words
 *   `and or div mod` and `*` are operators; elsewhere they are names / the name test `*`.
 * A name directly followed by '(' is a function name.
 */
import { queryError } from './error.js';

export type TokenKind =
  | 'name'
  | 'function'
  | 'number'
  | 'literal'
  | '('
  | ')'
  | '['
  | ']'
  | ','
  | '/'
  | '//'
  | '|'
  | '.'
  | '..'
  | '@'
  | '::'
  | '*'
  | '='
  | '!='
  | '<'
  | '<='
  | '>'
  | '>='
  | '+'
  | '-'
  | 'and'
  | 'or'
  | 'div'
  | 'mod'
  | 'multiply'
  | 'end';

export type Token = { kind: TokenKind; text: string; pos: number; value?: number };

const nameStart = /[A-Za-z_\u00C0-\uFFFF]/;
const nameChar = /[A-Za-z0-9_.\-\u00B7\u00C0-\uFFFF]/;
const operatorNames = new Set(['and', 'or', 'div', 'mod']);
const endsOperand = new Set<TokenKind>(['name', 'number', 'literal', ')', ']', '.', '..', '*']);

function readName(text: string, i: number): number {
  let j = i + 1;
  while (j < text.length && nameChar.test(text.charAt(j))) j++;
  // A QName prefix (`module:name`, as YANG JSON encodes augmented fields).
  if (text.charAt(j) === ':' && text.charAt(j + 1) !== ':' && nameStart.test(text.charAt(j + 1))) {
    j += 2;
    while (j < text.length && nameChar.test(text.charAt(j))) j++;
  }
  return j;
}

export function lexWhere(text: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  const operandBefore = () => {
    const prev = out[out.length - 1];
    return prev !== undefined && endsOperand.has(prev.kind);
  };
  while (i < text.length) {
    const ch = text.charAt(i);
    if (ch === ' ' || ch === '\t' || ch === '\n' || ch === '\r') {
      i++;
      continue;
    }
    const start = i;
    const two = text.slice(i, i + 2);
    if (ch === '"' || ch === "'") {
      const close = text.indexOf(ch, i + 1);
      if (close < 0) throw queryError('where', 'unterminated-string', start, 'the string literal is not closed');
      out.push({ kind: 'literal', text: text.slice(i + 1, close), pos: start });
      i = close + 1;
      continue;
    }
    if (/[0-9]/.test(ch) || (ch === '.' && /[0-9]/.test(text.charAt(i + 1)))) {
      const m = /[0-9]*(?:\.[0-9]*)?/y;
      m.lastIndex = i;
      const num = m.exec(text)?.[0] ?? ch;
      out.push({ kind: 'number', text: num, pos: start, value: Number(num) });
      i += num.length;
      continue;
    }
    if (two === '..' || two === '//' || two === '!=' || two === '<=' || two === '>=' || two === '::') {
      out.push({ kind: two, text: two, pos: start });
      i += 2;
      continue;
    }
    if ('()[],/|.@=<>+-'.includes(ch)) {
      out.push({ kind: ch as TokenKind, text: ch, pos: start });
      i++;
      continue;
    }
    if (ch === '*') {
      out.push({ kind: operandBefore() ? 'multiply' : '*', text: ch, pos: start });
      i++;
      continue;
    }
    if (nameStart.test(ch)) {
      const end = readName(text, i);
      const word = text.slice(i, end);
      i = end;
      if (operandBefore() && operatorNames.has(word)) {
        out.push({ kind: word as TokenKind, text: word, pos: start });
        continue;
      }
      let k = i;
      while (k < text.length && /\s/.test(text.charAt(k))) k++;
      out.push({ kind: text.charAt(k) === '(' ? 'function' : 'name', text: word, pos: start });
      continue;
    }
    throw queryError('where', 'syntax', start, `unexpected character '${ch}'`);
  }
  out.push({ kind: 'end', text: '', pos: text.length });
  return out;
}
