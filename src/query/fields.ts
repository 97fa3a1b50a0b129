/**
 * `fields`: which fields of an object to return.
 *
 *   sequence   := expr (',' expr)*
 *   expr       := path ('/' '[' sequence ']')?
 *   path       := field-name ('/' path)?
 *   field-name := identifier ('=' identifier)?     the second identifier renames the field
 *
 * The text is parsed once into a selection tree; `apply` walks the tree and the object
 * together. Selecting a field whole wins over selecting parts of it (`a,a/b` returns all of a).
 * Lists are projected item by item (`hosts/host-id` keeps each host's id). A field that is
 * absent, or a part selection that finds nothing, leaves the field out of the output.
 * A field lies at most MAX_EXPRESSION_DEPTH levels deep (`a/b/[c]` is three): deeper is a 400
 * `too-deep`, before the recursion of the parser and of `apply` goes on.
 */
import { isObject, type Json, type JsonObject } from '../lib/json.js';
import { queryError } from './error.js';
import { MAX_EXPRESSION_DEPTH } from './limits.js';

export type FieldsSelector = { readonly source: string; apply(obj: Json): Json };
export type FieldsOptions = { known?: (path: string[]) => boolean };

/** `sub` null: the field whole; otherwise only these parts of it. */
type Selection = Map<string, { out: string; pos: number; sub: Selection | null }>;

type Token = { kind: 'name' | ',' | '/' | '[' | ']' | '=' | 'end'; text: string; pos: number };

function lex(text: string): Token[] {
  const out: Token[] = [];
  const re = /\s*(?:([,/[\]=])|([^,/[\]=\s]+))/y;
  let i = 0;
  while (i < text.length) {
    re.lastIndex = i;
    const m = re.exec(text);
    if (!m) break; // only blanks remain
    const pos = re.lastIndex - m[0].trimStart().length;
    if (m[1] !== undefined) out.push({ kind: m[1] as Token['kind'], text: m[1], pos });
    else out.push({ kind: 'name', text: m[2] ?? '', pos });
    i = re.lastIndex;
  }
  out.push({ kind: 'end', text: '', pos: text.length });
  return out;
}

type Step = { name: string; out: string; pos: number };

class Parser {
  private i = 0;
  constructor(
    private readonly toks: Token[],
    private readonly opts: FieldsOptions,
  ) {}

  private peek(): Token {
    return this.toks[this.i] ?? { kind: 'end', text: '', pos: 0 };
  }

  private expect(kind: Token['kind'], what: string): Token {
    const t = this.peek();
    if (t.kind !== kind) {
      const seen = t.kind === 'end' ? 'the end' : `'${t.text}'`;
      throw queryError('fields', 'syntax', t.pos, `expected ${what}, found ${seen}`);
    }
    this.i++;
    return t;
  }

  parseAll(): Selection {
    const sel: Selection = new Map();
    this.sequence(sel, []);
    if (this.peek().kind !== 'end') this.expect('end', "',' or the end");
    return sel;
  }

  private sequence(into: Selection, parent: string[]): void {
    this.expr(into, parent);
    while (this.peek().kind === ',') {
      this.i++;
      this.expr(into, parent);
    }
  }

  private expr(into: Selection, parent: string[]): void {
    const steps: Step[] = [this.fieldName(parent)];
    let sub: Selection | null = null;
    while (this.peek().kind === '/') {
      this.i++;
      if (this.peek().kind === '[') {
        this.i++;
        sub = new Map();
        this.sequence(sub, [...parent, ...steps.map((s) => s.name)]);
        this.expect(']', "',' or ']'");
        break;
      }
      steps.push(this.fieldName([...parent, ...steps.map((s) => s.name)]));
    }
    insert(into, steps, sub);
  }

  private fieldName(parent: string[]): Step {
    const t = this.expect('name', 'a field name');
    if (parent.length >= MAX_EXPRESSION_DEPTH)
      throw queryError('fields', 'too-deep', t.pos, `a field is nested deeper than ${MAX_EXPRESSION_DEPTH} levels`, {
        limit: MAX_EXPRESSION_DEPTH,
      });
    let out = t.text;
    if (this.peek().kind === '=') {
      this.i++;
      out = this.expect('name', 'the new field name after =').text;
    }
    if (this.opts.known && !this.opts.known([...parent, t.text])) {
      throw queryError('fields', 'unknown-field', t.pos, `there is no field ${[...parent, t.text].join('/')}`);
    }
    return { name: t.text, out, pos: t.pos };
  }
}

function insert(into: Selection, steps: Step[], sub: Selection | null): void {
  let level: Selection | null = into;
  steps.forEach((step, i) => {
    if (level === null) return; // an ancestor is already selected whole
    const last = i === steps.length - 1;
    let entry = level.get(step.name);
    if (entry) sameName(step.name, entry.out, step.out, step.pos);
    if (!entry) {
      outFree(level, step.name, step.out, step.pos);
      entry = { out: step.out, pos: step.pos, sub: last ? sub : new Map() };
      level.set(step.name, entry);
    } else if (last) {
      entry.sub = sub === null || entry.sub === null ? null : merge(entry.sub, sub);
    }
    level = entry.sub;
  });
}

function sameName(name: string, first: string, second: string, pos: number): void {
  if (first !== second)
    throw queryError('fields', 'conflicting-rename', pos, `field ${name} is renamed both to ${first} and to ${second}`);
}

/** Two fields of one level must not end up under one output name (`name=url,url`). */
function outFree(level: Selection, name: string, out: string, pos: number): void {
  for (const [other, e] of level) {
    if (e.out === out)
      throw queryError(
        'fields',
        'duplicate-output',
        pos,
        `field ${out} would be given twice: by ${other === out ? out : `${other} (renamed)`} and by ${name === out ? out : `${name} (renamed)`}`,
      );
  }
}

function merge(a: Selection, b: Selection): Selection {
  for (const [name, e] of b) {
    const mine = a.get(name);
    if (mine) sameName(name, mine.out, e.out, e.pos);
    if (!mine) {
      outFree(a, name, e.out, e.pos);
      a.set(name, e);
    } else mine.sub = mine.sub === null || e.sub === null ? null : merge(mine.sub, e.sub);
  }
  return a;
}

/** Undefined when nothing selected is present. */
function project(v: Json, sel: Selection): Json | undefined {
  if (Array.isArray(v)) {
    const items: Json[] = [];
    for (const item of v) {
      const p = project(item, sel);
      if (p !== undefined) items.push(p);
    }
    return items.length === 0 && v.length > 0 ? undefined : items;
  }
  if (!isObject(v)) return undefined;
  const out: JsonObject = {};
  let any = false;
  for (const [name, e] of sel) {
    const child = Object.hasOwn(v, name) ? v[name] : undefined;
    if (child === undefined) continue;
    const picked = e.sub === null ? child : project(child, e.sub);
    if (picked === undefined) continue;
    out[e.out] = picked;
    any = true;
  }
  return any ? out : undefined;
}

/** Parse once per request; throws ApiError('invalid-query', {code, position, parameter:'fields'}). */
export function compileFields(text: string, opts: FieldsOptions = {}): FieldsSelector {
  const sel = new Parser(lex(text), opts).parseAll();
  return {
    source: text,
    apply: (obj) => (isObject(obj) ? (project(obj, sel) ?? {}) : obj),
  };
}
