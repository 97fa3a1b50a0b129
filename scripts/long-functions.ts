/**
 * The guardrail "functions a reader can hold": every function longer than a limit (default
 * 100 lines) is a failure: function declarations and expressions, arrow functions (callbacks
 * included), methods, constructors and accessors, each counted from its first line to its last
 * (a nested function counts in its parent too, and fails on its own when it is long itself).
 * A class longer than the limit is listed for information only: a cohesive class (a parser, a
 * state machine) may well be long when each of its methods is short. Uses the TypeScript
 * compiler's parser (no type check).
 *
 * Usage: tsx scripts/long-functions.ts [--check] [--limit N] [DIR...]   (DIRs: src scripts)
 * Prints `lines  file:line  name` for each, longest first, and a count. Exits 1 with --check
 * when a function is over the limit (what a CI step runs), else 0 (a report).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

const argv = process.argv.slice(2);
const check = argv.includes('--check');
const args = argv.filter((a) => a !== '--check');
const limitAt = args.indexOf('--limit');
const limit = limitAt >= 0 ? Number(args[limitAt + 1]) : 100;
const dirs = args.filter((_, i) => limitAt < 0 || (i !== limitAt && i !== limitAt + 1));
const roots = dirs.length > 0 ? dirs : ['src', 'scripts'];

function sourceFiles(dir: string): string[] {
  if (!statSync(dir).isDirectory()) return [dir];
  return readdirSync(dir)
    .sort()
    .flatMap((name) => {
      const p = join(dir, name);
      if (name === 'node_modules') return [];
      if (statSync(p).isDirectory()) return sourceFiles(p);
      return p.endsWith('.ts') && !p.endsWith('.d.ts') ? [p] : [];
    });
}

type Found = { lines: number; where: string; name: string };

function nameOf(node: ts.Node): string {
  const named = node as ts.Node & { name?: ts.Node };
  if (named.name && (ts.isIdentifier(named.name) || ts.isStringLiteral(named.name))) return named.name.text;
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  const parent = node.parent as ts.Node | undefined;
  if (parent && ts.isVariableDeclaration(parent) && ts.isIdentifier(parent.name)) return parent.name.text;
  if (parent && ts.isPropertyAssignment(parent) && ts.isIdentifier(parent.name)) return parent.name.text;
  if (parent && ts.isCallExpression(parent)) return `(callback of ${parent.expression.getText().slice(0, 40)})`;
  return '(anonymous)';
}

function scan(file: string): Found[] {
  const text = readFileSync(file, 'utf8');
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const out: Found[] = [];
  const visit = (node: ts.Node): void => {
    const isClass = ts.isClassDeclaration(node) || ts.isClassExpression(node);
    if ((ts.isFunctionLike(node) && 'body' in node && node.body !== undefined) || isClass) {
      const start = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
      const end = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
      const lines = end - start + 1;
      if (lines > limit)
        out.push({
          lines,
          where: `${relative('.', file)}:${start + 1}`,
          name: (isClass ? 'class ' : '') + nameOf(node),
        });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

const found = roots
  .flatMap(sourceFiles)
  .flatMap(scan)
  .sort((a, b) => b.lines - a.lines);
const fns = found.filter((f) => !f.name.startsWith('class '));
const classes = found.filter((f) => f.name.startsWith('class '));
const line = (f: Found) => `${String(f.lines).padStart(5)}  ${f.where}  ${f.name}`;
if (fns.length > 0) console.log(`functions over ${limit} lines (split them by responsibility):`);
for (const f of fns) console.log(line(f));
if (classes.length > 0) console.log(`classes over ${limit} lines (for information: fine when each method is short):`);
for (const f of classes) console.log(line(f));
console.log(
  `long-functions: ${fns.length} functions (${fns.length > 0 ? 'failures' : 'none'}) and ${classes.length} classes (information) over ${limit} lines in ${roots.join(' ')}`,
);
if (check && fns.length > 0) process.exit(1);
