/**
 * Variable expansion templates: compiled once when the configuration is written,
 * rendered per message. Compilation resolves everything that can be known in advance (syntax,
 * functions, regexes, which variables exist); rendering is a loop over a flat list of literals
 * and expressions and never throws: a variable without a value gives {ok: false}, and the
 * exporter ignores the message and records the reason.
 */
import { isJsonText } from '../lib/json.js';
import { ApiError } from '../lib/errors.js';
import { prepareCall, type Step } from './functions.js';
import { parseTemplate } from './parse.js';

/** `json: true` (templates compiled with `json`): the value is valid JSON, known without parsing it. */
export type RenderResult = { ok: true; value: string; json?: true } | { ok: false; variable: string; reason: string };
export type Lookup = (name: string) => string | undefined;

export type Template = {
  /** Every variable referenced, full names (`SYS_DNS_ZONES[default]`). */
  readonly variables: ReadonlySet<string>;
  /** True when the text has no `${...}`: render always gives the same value. */
  readonly static: boolean;
  render(lookup: Lookup): RenderResult;
  /**
   * Renders with `sample` giving every variable's value (write-time checks), and maps an
   * offset in the result back to the template text: into the literal it came from, or to the
   * `${` of the expression that produced it.
   */
  renderSample(sample: (variable: string) => string): { text: string; sourceAt(offset: number): number };
};

export type TemplateOptions = {
  /** Field path used in errors, e.g. `data` or `headers[2].value`. */
  field: string;
  /** Whether a name may be referenced; usually `(n) => knownVariable(n, declared)`. */
  isDefined: (name: string) => boolean;
  /**
   * data-format json: render marks its result `json: true` when it is valid JSON for sure
   * (jsonSlots), so that the exporter parses it only when unsure.
   */
  json?: boolean;
};

/** Always available, besides the two indexed families below. */
export const builtinVariables: ReadonlySet<string> = new Set([
  'MSG',
  'TOPIC',
  'MSG_HOST',
  'MSG_MTIME',
  'MSG_ORIGIN',
  'MSG_PAYLOAD',
  'MSG_PRODUCER_NAME',
  'MSG_REMAIN',
  'MSG_SEQNO',
  'MSG_TIME',
  'SYS_SITE',
  'SYS_TENANT',
  'SYS_GLOBAL_DOMAIN',
]);

const indexed = /^(?:SYS_DNS_ZONES|SYS_SITE_LABELS)\[[^\]]+\]$/;

/**
 * Built-in or declared (`variables[].name`). Whether a zone or label exists is only known at
 * run time (sites and zones change), so any index is accepted here and a missing one renders
 * as {ok: false}.
 */
/** Whether `name` is a built-in's: one of builtinVariables, or an indexed one's base (SYS_DNS_ZONES). */
export function builtinName(name: string): boolean {
  return knownVariable(name, new Set()) || name === 'SYS_DNS_ZONES' || name === 'SYS_SITE_LABELS';
}

export function knownVariable(name: string, declared: ReadonlySet<string>): boolean {
  return builtinVariables.has(name) || declared.has(name) || indexed.test(name);
}

type CompiledExpr = { readonly variable: string; readonly steps: readonly Step[] };

export function compileTemplate(text: string, opts: TemplateOptions): Template {
  const parts: Array<string | CompiledExpr> = [];
  const variables = new Set<string>();
  /** Offset in `text` where each part begins (a literal) or its `${` (an expression). */
  const sources: number[] = [];
  let end = 0;
  for (const part of parseTemplate(text, opts.field)) {
    if (typeof part === 'string') {
      parts.push(part);
      sources.push(end);
      continue;
    }
    sources.push(part.start);
    end = part.end;
    if (!opts.isDefined(part.variable)) {
      throw new ApiError(
        'invalid-value',
        `Cannot use the value of ${opts.field} as a variable expression: variable ${part.variable} is not defined (${
          part.variable === 'SYS_DNS_ZONES' || part.variable === 'SYS_SITE_LABELS'
            ? `it takes an index: ${part.variable}[name]`
            : 'declare it in variables'
        }) at position ${part.position}`,
        {
          code: 'undefined-variable',
          position: part.position,
          path: opts.field,
          variable: part.variable,
        },
      );
    }
    variables.add(part.variable);
    parts.push({ variable: part.variable, steps: part.calls.map((c) => prepareCall(c, opts.field)) });
  }

  const renderSample = (sample: (variable: string) => string) => sampleRender(text, parts, sources, sample);
  if (variables.size === 0) {
    const value = parts.join('');
    const fixed: RenderResult = opts.json && isJsonText(value) ? { ok: true, value, json: true } : { ok: true, value };
    return { variables, static: true, render: () => fixed, renderSample };
  }
  const slots = opts.json ? jsonSlots(parts) : undefined;
  return { variables, static: false, render: (lookup) => render(parts, lookup, slots), renderSample };
}

/** Where an expression's value lands in a JSON template: inside a string, or as a whole value. */
type JsonSlot = 'string' | 'value';

/**
 * Where each expression of a JSON template lands, when every one lands either inside a string
 * or as a whole value (with only structural characters or whitespace beside it) and the template
 * with such values in their places is valid JSON; else undefined. A value then keeps the result
 * valid JSON when, inside a string, it has no quote, backslash or control character, and as a
 * whole value, it is valid JSON itself (render checks each, far cheaper than parsing the result).
 */
function jsonSlots(parts: ReadonlyArray<string | CompiledExpr>): JsonSlot[] | undefined {
  const slots: JsonSlot[] = [];
  let skeleton = '';
  let inString = false;
  for (const part of parts) {
    if (typeof part !== 'string') {
      slots.push(inString ? 'string' : 'value');
      // Spaces around a whole value: a literal digit or letter beside it makes the skeleton invalid.
      skeleton += inString ? 'a' : ' 0 ';
      continue;
    }
    for (let i = 0; i < part.length; i++) {
      const c = part[i];
      if (!inString) inString = c === '"';
      else if (c === '"') inString = false;
      else if (c === '\\') {
        // An escape whose character would be the value's first: unsure.
        if (i + 1 >= part.length) return undefined;
        i++;
      }
    }
    skeleton += part;
  }
  return isJsonText(skeleton) ? slots : undefined;
}

/** Characters that would end or break the JSON string a value is put into. */
const stringBreaker = /["\\\u0000-\u001f]/;
const jsonNumber = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$/;

function fitsSlot(slot: JsonSlot, value: string): boolean {
  if (slot === 'string') return !stringBreaker.test(value);
  return jsonNumber.test(value) || value === 'true' || value === 'false' || value === 'null' || isJsonText(value);
}

function sampleRender(
  text: string,
  parts: ReadonlyArray<string | CompiledExpr>,
  sources: readonly number[],
  sample: (variable: string) => string,
): { text: string; sourceAt(offset: number): number } {
  let out = '';
  const starts: number[] = [];
  parts.forEach((part) => {
    starts.push(out.length);
    if (typeof part === 'string') out += part;
    else out += part.steps.reduce((v, step) => step(v), sample(part.variable));
  });
  const sourceAt = (offset: number): number => {
    if (offset >= out.length) return text.length;
    let k = parts.length - 1;
    while (k > 0 && (starts[k] ?? 0) > offset) k--;
    const part = parts[k];
    let src = sources[k] ?? 0;
    if (typeof part !== 'string') return src;
    // Inside a literal, output and template differ only where `$${` became `${`.
    for (let j = starts[k] ?? 0; j < offset && src < text.length; j++) src += text.startsWith('$${', src) ? 2 : 1;
    return Math.min(src, text.length);
  };
  return { text: out, sourceAt };
}

function render(
  parts: ReadonlyArray<string | CompiledExpr>,
  lookup: Lookup,
  slots: readonly JsonSlot[] | undefined,
): RenderResult {
  let out = '';
  let json = slots !== undefined;
  let k = 0;
  for (const part of parts) {
    if (typeof part === 'string') {
      out += part;
      continue;
    }
    let value = lookup(part.variable);
    if (value === undefined)
      return { ok: false, variable: part.variable, reason: `variable ${part.variable} has no value` };
    for (const step of part.steps) value = step(value);
    if (json) json = fitsSlot(slots![k]!, value);
    k++;
    out += value;
  }
  return json ? { ok: true, value: out, json: true } : { ok: true, value: out };
}
