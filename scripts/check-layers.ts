/**
 * Lists import cycles under src/: between folders (a folder is the first path segment under
 * src/; files directly in src/ form the folder "(root)") and between files. Every import
 * counts, `import type` too: a layer that names a type of the layer above still depends on it.
 *
 * Usage: tsx scripts/check-layers.ts [--report]
 * Exits 1 when it finds a cycle, unless --report is given (then it only prints). Once every
 * cycle is gone this runs in `npm test` without --report, so a new cycle fails the suite.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

type Edge = { from: string; to: string; typeOnly: boolean };

const root = resolve(process.argv[1] ?? '.', '..', '..');
const src = join(root, 'src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((name) => {
      const p = join(dir, name);
      if (statSync(p).isDirectory()) return sourceFiles(p);
      return p.endsWith('.ts') && !p.endsWith('.d.ts') ? [p] : [];
    });
}

const importRe = /^\s*(import|export)\s+(type\s+)?(?:[^'";]*?\s+from\s+)?['"]([^'"]+)['"]/gm;
const dynamicRe = /import\(\s*['"]([^'"]+)['"]\s*\)/g;

/** Relative imports of one file, resolved to files under src/ (`x.js` is the source `x.ts`). */
function importsOf(file: string): Edge[] {
  const text = readFileSync(file, 'utf8');
  const out: Edge[] = [];
  const add = (spec: string, typeOnly: boolean) => {
    if (!spec.startsWith('.')) return;
    const target = resolve(dirname(file), spec.replace(/\.js$/, '.ts'));
    if (target.startsWith(src + '/')) out.push({ from: rel(file), to: rel(target), typeOnly });
  };
  for (const m of text.matchAll(importRe)) add(m[3] ?? '', m[2] !== undefined);
  for (const m of text.matchAll(dynamicRe)) add(m[1] ?? '', false);
  return out;
}

function rel(file: string): string {
  return relative(src, file);
}

export function folderOf(file: string): string {
  return file.includes('/') ? (file.split('/')[0] ?? '(root)') : '(root)';
}

/** Strongly connected components with more than one member (Tarjan), each sorted. */
export function cycles(nodes: string[], next: (n: string) => string[]): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, counter);
    low.set(v, counter);
    counter++;
    stack.push(v);
    onStack.add(v);
    for (const w of next(v)) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) ?? 0, low.get(w) ?? 0));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) ?? 0, index.get(w) ?? 0));
    }
    if (low.get(v) === index.get(v)) {
      const scc: string[] = [];
      for (;;) {
        const w = stack.pop() as string;
        onStack.delete(w);
        scc.push(w);
        if (w === v) break;
      }
      if (scc.length > 1) found.push(scc.sort());
    }
  };
  for (const n of nodes) if (!index.has(n)) visit(n);
  return found.sort((a, b) => (a[0] ?? '').localeCompare(b[0] ?? ''));
}

function main(): void {
  const report = process.argv.includes('--report');
  const files = sourceFiles(src).map(rel);
  const edges = sourceFiles(src).flatMap(importsOf);
  const fileNext = new Map<string, string[]>();
  for (const e of edges) fileNext.set(e.from, [...(fileNext.get(e.from) ?? []), e.to]);

  const folderEdges = edges.filter((e) => folderOf(e.from) !== folderOf(e.to));
  const folderNext = new Map<string, Set<string>>();
  for (const e of folderEdges) {
    const set = folderNext.get(folderOf(e.from)) ?? new Set<string>();
    set.add(folderOf(e.to));
    folderNext.set(folderOf(e.from), set);
  }
  const folders = [...new Set(files.map(folderOf))].sort();
  const folderCycles = cycles(folders, (f) => [...(folderNext.get(f) ?? [])].sort());
  const fileCycles = cycles(files, (f) => fileNext.get(f) ?? []);

  console.log(`check-layers: ${files.length} files, ${edges.length} imports, ${folders.length} folders`);
  console.log(`folder cycles: ${folderCycles.length}`);
  for (const cycle of folderCycles) {
    console.log(`  one cycle through: ${cycle.join(', ')}`);
    // Pairs of folders that import each other; the direction with fewer imports is listed
    // file by file (it is usually the one that goes up), the other only counted.
    for (const [i, a] of cycle.entries()) {
      for (const b of cycle.slice(i + 1)) {
        const ab = folderEdges.filter((e) => folderOf(e.from) === a && folderOf(e.to) === b);
        const ba = folderEdges.filter((e) => folderOf(e.from) === b && folderOf(e.to) === a);
        if (ab.length === 0 || ba.length === 0) continue;
        const [few, many] = ab.length <= ba.length ? [ab, ba] : [ba, ab];
        const [from, to] = [folderOf(few[0]?.from ?? ''), folderOf(few[0]?.to ?? '')];
        console.log(`    ${from} <-> ${to}: ${many.length} imports ${to} -> ${from}, and ${few.length} back:`);
        for (const e of few) console.log(`      ${e.from} imports ${e.to}${e.typeOnly ? ' (type)' : ''}`);
      }
    }
  }
  console.log(`file cycles: ${fileCycles.length}`);
  for (const cycle of fileCycles) {
    console.log(`  ${cycle.join(' <-> ')}`);
    const members = new Set(cycle);
    for (const e of edges) {
      if (members.has(e.from) && members.has(e.to))
        console.log(`    ${e.from} imports ${e.to}${e.typeOnly ? ' (type)' : ''}`);
    }
  }
  if (!report && (folderCycles.length > 0 || fileCycles.length > 0)) process.exit(1);
}

main();
