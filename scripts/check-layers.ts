/**
 * Keeps the folders under src/ layers. A folder is the first path segment under src/. LAYERS
 * lists them from the bottom up; folders in one entry are siblings that do not import each
 * other. An import (`import type` too: a layer that names a type of the layer above still
 * depends on it) may only go to its own folder or to a lower layer. Within a folder, files
 * must not import each other in a circle. A file directly in src/, or a folder LAYERS does not
 * list, is a failure too: a new folder first gets its place in the order.
 *
 * A folder may itself be layered (SUBLAYERS: its subfolders, bottom first, and `.` for the files
 * directly in it): an import between two of its parts follows the same rule.
 *
 * Usage: tsx scripts/check-layers.ts [--src DIR]   (DIR defaults to this repository's src/)
 * Prints every offending import and exits 1 when there is one; `npm test` runs it as a check.
 * The same order is stated in docs/ARCHITECTURE.md.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/** The layers, bottom first. */
export const LAYERS: readonly (readonly string[])[] = [
  ['lib'],
  ['query', 'expand'],
  ['store'],
  ['secrets', 'bus'],
  ['resources'],
  ['auth', 'exporter', 'model'],
  ['api'],
  ['ops', 'fleet'],
  ['ui', 'cli'],
  ['main'],
];

/**
 * Folders layered inside, bottom first (`.` = the files directly in the folder). fleet/: what
 * both roles use, then the control plane's and the edge site's files (siblings: neither role
 * imports the other), then the assembly of the role (`fleet/role.ts`).
 */
export const SUBLAYERS: Readonly<Record<string, readonly (readonly string[])[]>> = {
  fleet: [['common'], ['control', 'site'], ['.']],
};

type Edge = { from: string; to: string; typeOnly: boolean };

const srcArg = process.argv.indexOf('--src');
const src = resolve(
  srcArg >= 0 ? (process.argv[srcArg + 1] ?? 'src') : join(resolve(process.argv[1] ?? '.', '..', '..'), 'src'),
);

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
  const files = sourceFiles(src).map(rel);
  const edges = sourceFiles(src).flatMap(importsOf);
  const fileNext = new Map<string, string[]>();
  for (const e of edges) fileNext.set(e.from, [...(fileNext.get(e.from) ?? []), e.to]);
  const rank = new Map<string, number>();
  for (const [i, layer] of LAYERS.entries()) for (const f of layer) rank.set(f, i);
  const problems: string[] = [];

  const folders = [...new Set(files.map(folderOf))].sort();
  for (const f of folders) {
    if (rank.has(f)) continue;
    problems.push(
      f === '(root)'
        ? `files directly in src/ belong to no layer: ${files.filter((x) => folderOf(x) === f).join(', ')}`
        : `folder src/${f}/ has no place in LAYERS (scripts/check-layers.ts)`,
    );
  }
  const layerOf = (f: string) => `${f} (layer ${(rank.get(f) ?? NaN) + 1})`;
  for (const e of edges) {
    const [a, b] = [folderOf(e.from), folderOf(e.to)];
    if (a === b || !rank.has(a) || !rank.has(b)) continue;
    const [ra, rb] = [rank.get(a) ?? 0, rank.get(b) ?? 0];
    if (rb < ra) continue;
    problems.push(
      `${rb > ra ? 'upward' : 'sideways'} import: ${e.from} imports ${e.to}${e.typeOnly ? ' (type)' : ''}: ` +
        `${layerOf(a)} may only import folders below it, ${layerOf(b)} is not`,
    );
  }

  for (const [folder, sub] of Object.entries(SUBLAYERS)) {
    const subRank = new Map<string, number>();
    for (const [i, layer] of sub.entries()) for (const p of layer) subRank.set(p, i);
    const partOf = (file: string) => {
      const rest = file.split('/').slice(1);
      return rest.length > 1 ? (rest[0] ?? '.') : '.';
    };
    const label = (p: string) => `${folder}/${p === '.' ? '' : p + '/'}`;
    for (const e of edges) {
      if (folderOf(e.from) !== folder || folderOf(e.to) !== folder) continue;
      const [a, b] = [partOf(e.from), partOf(e.to)];
      if (a === b) continue;
      const [ra, rb] = [subRank.get(a), subRank.get(b)];
      if (ra === undefined || rb === undefined) {
        problems.push(
          `${label(ra === undefined ? a : b)} has no place in SUBLAYERS.${folder} (scripts/check-layers.ts)`,
        );
        continue;
      }
      if (rb < ra) continue;
      problems.push(
        `${rb > ra ? 'upward' : 'sideways'} import: ${e.from} imports ${e.to}${e.typeOnly ? ' (type)' : ''}: ` +
          `inside ${folder}/, ${label(a)} may only import the parts below it (${sub.map((l) => l.join(' ')).join(' < ')})`,
      );
    }
  }

  const folderEdges = edges.filter((e) => folderOf(e.from) !== folderOf(e.to));
  const folderNext = new Map<string, Set<string>>();
  for (const e of folderEdges) {
    const set = folderNext.get(folderOf(e.from)) ?? new Set<string>();
    set.add(folderOf(e.to));
    folderNext.set(folderOf(e.from), set);
  }
  const folderCycles = cycles(folders, (f) => [...(folderNext.get(f) ?? [])].sort());
  for (const cycle of folderCycles) problems.push(`folder cycle: ${cycle.join(', ')}`);
  const fileCycles = cycles(files, (f) => fileNext.get(f) ?? []);
  for (const cycle of fileCycles) {
    const members = new Set(cycle);
    const inside = edges.filter((e) => members.has(e.from) && members.has(e.to));
    problems.push(
      `file cycle: ${cycle.join(' <-> ')}\n` +
        inside.map((e) => `    ${e.from} imports ${e.to}${e.typeOnly ? ' (type)' : ''}`).join('\n'),
    );
  }

  for (const p of problems) console.log(`FAIL ${p}`);
  console.log(`layers, bottom first: ${LAYERS.map((l) => l.join(' ')).join(' < ')}`);
  for (const [folder, sub] of Object.entries(SUBLAYERS))
    console.log(`inside ${folder}/: ${sub.map((l) => l.join(' ')).join(' < ')}`);
  console.log(
    `check-layers: ${files.length} files, ${edges.length} imports, ${folders.length} folders in ${LAYERS.length} layers; ` +
      `${problems.length} problems (${folderCycles.length} folder cycles, ${fileCycles.length} file cycles)`,
  );
  if (problems.length > 0) process.exit(1);
}

main();
