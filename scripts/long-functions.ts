/**
 * Lists the functions longer than a limit (default 100 lines), longest first: function
 * declarations and expressions, arrow functions, methods, constructors and accessors, each
 * counted from its first line to its last (a nested function counts in its parent too, and is
 * listed on its own when it is long itself). Classes are listed with their whole length, as
 * `class X`. Uses the TypeScript compiler's parser (no type check).
 *
 * Usage: tsx scripts/long-functions.ts [--limit N] [DIR...]   (DIRs default to src scripts)
 * Prints `lines  file:line  name` and a count; exits 0 (it reports, `npm test` does not run it).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

const args = process.argv.slice(2);
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
for (const f of found) console.log(`${String(f.lines).padStart(5)}  ${f.where}  ${f.name}`);
const fns = found.filter((f) => !f.name.startsWith('class '));
console.log(
  `long-functions: ${fns.length} functions and ${found.length - fns.length} classes over ${limit} lines in ${roots.join(' ')}`,
);
