/**
 * The exporter reference a user has (docs/EXPORTER.md) names every configuration field of the
 * schema the server validates with, every built-in variable, every expansion function and every
 * state field; README and docs point there, not to documents a user of the repository lacks.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { webhookSchema } from '../../src/resources/schemas.js';
import { builtinVariables } from '../../src/expand/template.js';
import { functions } from '../../src/expand/functions.js';
import { ExporterState } from '../../src/exporter/state.js';

const root = join(import.meta.dirname, '../..');
const reference = (): string => readFileSync(join(root, 'docs', 'EXPORTER.md'), 'utf8');
const escape = (t: string) => t.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** `name` in backticks; a nested `a/b` may also be written `a: {b, c}` inside one code span. */
const named = (doc: string, name: string): boolean => {
  if (doc.includes('`' + name + '`') || doc.includes('`' + name + '/')) return true;
  const cut = name.lastIndexOf('/');
  if (cut < 0) return false;
  const [parent, leaf] = [name.slice(0, cut).replace(/\[\]$/, ''), name.slice(cut + 1)];
  return new RegExp('`' + escape(parent) + '[:/][^`]*\\b' + escape(leaf) + '\\b[^`]*`').test(doc);
};

type Node = { properties?: Record<string, Node>; items?: Node };

/** Field paths of the schema: `a`, `a/b` for members of an object, `a[]/b` for list entries. */
function fieldPaths(node: Node, prefix: string): string[] {
  const out: string[] = [];
  for (const [name, child] of Object.entries(node.properties ?? {})) {
    const path = `${prefix}${name}`;
    out.push(path);
    if (child.properties) out.push(...fieldPaths(child, `${path}/`));
    if (child.items?.properties && name === 'variables') {
      for (const [source, s] of Object.entries(child.items.properties))
        if (s.properties) out.push(`${path}[]/${source}`);
    }
  }
  return out;
}

test('every configuration field of the webhook schema is in docs/EXPORTER.md', () => {
  const doc = reference();
  const missing = fieldPaths(webhookSchema as Node, '').filter((f) => !named(doc, f));
  assert.equal(missing, []);
});

test('every built-in variable and every expansion function is in docs/EXPORTER.md', () => {
  const doc = reference();
  const missing = [...builtinVariables, 'SYS_DNS_ZONES[<zone>]', 'SYS_SITE_LABELS[<label>]'].filter(
    (v) => !named(doc, v),
  );
  assert.equal(missing, []);
  const fns = Object.entries(functions).map(([name, def]) => [name, ...def.args].join(' '));
  assert.equal(
    fns.filter((f) => !named(doc, f)),
    [],
  );
});

test('every state field and status is in docs/EXPORTER.md, and tries: 0 is unlimited', () => {
  const doc = reference();
  const state = new ExporterState(0);
  state.error('x', 0);
  const missing = [...Object.keys(state.toJson()), 'site', 'starting', 'ready', 'error', 'stopped'].filter(
    (f) => !named(doc, f),
  );
  assert.equal(missing, []);
  assert.match(doc, /`0` means unlimited/);
});

test('README and docs point to the reference, never to seed sections or CONTRACT paragraphs', () => {
  const files = [
    'README.md',
    ...readdirSync(join(root, 'docs'))
      .filter((f) => f.endsWith('.md'))
      .map((f) => join('docs', f)),
  ];
  for (const f of files) {
    const text = readFileSync(join(root, f), 'utf8');
    assert.not.match(text, /\bseed \d|CONTRACT|§/, f);
  }
  assert.match(readFileSync(join(root, 'README.md'), 'utf8'), /docs\/EXPORTER\.md/);
});

test.run();
