/**
 * The Markdown of README.md and docs/ links only to files that exist, and a link to a heading
 * (`FILE.md#anchor`) names a heading of that file (GitHub's anchor form: lower case, spaces
 * to dashes, punctuation dropped). Documents move between files; their links must follow.
 */
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';

const root = join(import.meta.dirname, '../..');
const files = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => join('docs', f)),
];

const anchorOf = (heading: string): string =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replace(/ /g, '-');

function anchors(file: string): Set<string> {
  const text = readFileSync(join(root, file), 'utf8').replace(/```[\s\S]*?```/g, '');
  return new Set([...text.matchAll(/^#{1,6} (.+)$/gm)].map((m) => anchorOf(m[1] ?? '')));
}

test('every relative link of README.md and docs/ reaches a file, and its anchor a heading', () => {
  const broken: string[] = [];
  for (const file of files) {
    const text = readFileSync(join(root, file), 'utf8')
      .replace(/```[\s\S]*?```/g, '')
      .replace(/`[^`\n]*`/g, '');
    for (const m of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      const link = m[1] ?? '';
      if (/^[a-z]+:/i.test(link)) continue;
      const [path = '', anchor] = link.split('#');
      const target = path === '' ? file : join(dirname(file), path);
      if (!existsSync(join(root, target))) broken.push(`${file}: ${link}`);
      else if (anchor !== undefined && target.endsWith('.md') && !anchors(target).has(anchor))
        broken.push(`${file}: ${link} (no such heading)`);
    }
  }
  assert.equal(broken, []);
});

test.run();
