/** `-o yaml|json|table`: how `ctl get` and `ctl watch` print objects on stdout. */
import { encode } from '../api/reply.js';
import { CliError } from './client.js';

export type Output = 'yaml' | 'json' | 'table';

export function outputOf(value: string | undefined, fallback: Output): Output {
  if (value === undefined) return fallback;
  if (value === 'yaml' || value === 'json' || value === 'table') return value;
  throw new CliError(`-o ${value}: choose yaml, json or table`, 2);
}

/** One object or a list, as YAML (one document per object), indented JSON or a table. */
export function render(value: unknown, output: Output): string {
  if (output === 'json') return JSON.stringify(value, null, 2) + '\n';
  if (output === 'yaml') {
    const text = encode(value, 'yaml', Array.isArray(value));
    return text.endsWith('\n') ? text : text + '\n';
  }
  // A long text (a PEM certificate, a template) is cut, so every row stays one readable line;
  // -o yaml or json shows it whole.
  return table(Array.isArray(value) ? value : [value], undefined, 60);
}

function cell(v: unknown, maxText = Infinity): string {
  if (v === undefined || v === null) return '';
  if (typeof v === 'string') return v.length > maxText ? v.slice(0, maxText - 3) + '...' : v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  const text = JSON.stringify(v);
  return text.length > 48 ? text.slice(0, 45) + '...' : text;
}

/**
 * Columns: name (or x-path) first, then every field in the order first seen, at most 10; a text
 * longer than `maxText` is cut with '...'.
 */
export function table(rows: unknown[], columns?: string[], maxText = Infinity): string {
  const objects = rows.map((r) =>
    r && typeof r === 'object' && !Array.isArray(r) ? (r as Record<string, unknown>) : { value: r },
  );
  if (objects.length === 0) return '(none)\n';
  let cols = columns;
  if (!cols) {
    const seen: string[] = [];
    for (const o of objects) for (const k of Object.keys(o)) if (!seen.includes(k)) seen.push(k);
    const first = ['name', 'x-path'].filter((k) => seen.includes(k));
    cols = [...first, ...seen.filter((k) => !first.includes(k))].slice(0, 10);
  }
  const head = cols.map((c) => c.toUpperCase());
  const body = objects.map((o) => cols.map((c) => cell(o[c], maxText).replace(/\s+/g, ' ')));
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) =>
    r
      .map((v, i) => (i === r.length - 1 ? v : v.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(head), ...body.map(line)].join('\n') + '\n';
}
