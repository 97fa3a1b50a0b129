/**
 * Reading and writing objects: `get`, `create`, `replace`, `merge`, `delete`, and the
 * multi-object `apply -f` / `diff -f` (a file in the shape of `GET /v1/config`: objects with
 * `x-path`, YAML documents or a JSON list). `diff` is the server's dry-run of the apply, so
 * defaults and secrets are compared as the server would (secret values never shown).
 */
import { parseAllDocuments } from 'yaml';
import { CliError, ok } from './client.js';
import { readInput, type Verb } from './verb.js';
import { outputOf, render } from './output.js';
import { apiPath, withQuery } from './paths.js';

export async function get(v: Verb): Promise<number> {
  const p = apiPath(v.args[0] ?? '/v1/config', 'get');
  if (v.flags.site !== undefined && p.area !== 'state')
    throw new CliError('get: --site applies to state paths (state/...)', 2);
  const path = withQuery(p.path, { where: v.flags.where, fields: v.flags.fields, site: v.flags.site });
  const res = await ok(await v.client.request('GET', path), `get ${p.path}`);
  const body: unknown = await res.json();
  // A site not connected: the control plane answered from its last report (stdout stays the data).
  const age = res.headers.get('x-state-age');
  if (age !== null)
    v.err(`site ${v.flags.site ?? '?'} is not connected: this is its last report, ${age} s old (x-state-age)\n`);
  v.out(render(body, outputOf(v.flags.output, Array.isArray(body) ? 'table' : 'yaml')));
  return 0;
}

export async function create(v: Verb): Promise<number> {
  const p = apiPath(v.args[0], 'create');
  const input = readInput(v.flags.file, 'create');
  const res = await ok(
    await v.client.request('POST', p.path, { body: input.text, type: input.type }),
    `create in ${p.path}`,
  );
  v.err(`created ${res.headers.get('location') ?? p.path}\n`);
  return 0;
}

export async function replace(v: Verb): Promise<number> {
  const p = apiPath(v.args[0], 'replace');
  const input = readInput(v.flags.file, 'replace');
  const res = await ok(
    await v.client.request('PUT', p.path, { body: input.text, type: input.type }),
    `replace ${p.path}`,
  );
  v.err(`${res.status === 201 ? 'created' : 'replaced'} ${p.path}\n`);
  return 0;
}

export async function merge(v: Verb): Promise<number> {
  const p = apiPath(v.args[0], 'merge');
  const input = readInput(v.flags.file, 'merge');
  await ok(await v.client.request('PATCH', p.path, { body: input.text, type: input.type }), `merge into ${p.path}`);
  v.err(`merged into ${p.path}\n`);
  return 0;
}

export async function del(v: Verb): Promise<number> {
  const p = apiPath(v.args[0], 'delete');
  await ok(await v.client.request('DELETE', p.path), `delete ${p.path}`);
  v.err(`deleted ${p.path}\n`);
  return 0;
}

type Impacted = { path: string; fields: Array<{ field: string; added: string[]; deleted: string[] }> };

/** The x-paths of a multi-object file (to say which objects are unchanged). */
function xPaths(text: string): string[] {
  const docs = parseAllDocuments(text);
  const values: unknown[] = [];
  for (const d of Array.isArray(docs) ? docs : [docs]) {
    if (d.errors.length > 0) throw new CliError(`cannot read the file: ${d.errors[0]?.message ?? 'bad YAML'}`, 2);
    const js: unknown = d.toJS();
    if (Array.isArray(js)) values.push(...(js as unknown[]));
    else if (js !== null && js !== undefined) values.push(js);
  }
  return values.map((o) =>
    o && typeof o === 'object' && typeof (o as Record<string, unknown>)['x-path'] === 'string'
      ? String((o as Record<string, unknown>)['x-path'])
      : '(an object without x-path)',
  );
}

async function dryRun(v: Verb, text: string, type: string): Promise<Impacted[]> {
  const res = await ok(
    await v.client.request('PATCH', withQuery('/v1/config', { 'default-operation': 'replace', 'dry-run': true }), {
      body: text,
      type,
    }),
    'dry-run',
  );
  const body = (await res.json()) as { 'impacted-resources'?: Impacted[] };
  return body['impacted-resources'] ?? [];
}

const changed = (i: Impacted) => i.fields.length > 0;

export async function apply(v: Verb): Promise<number> {
  const input = readInput(v.flags.file, 'apply');
  const paths = xPaths(input.text);
  const impacted = await dryRun(v, input.text, input.type);
  const touched = new Set(impacted.filter(changed).map((i) => i.path));
  if (touched.size > 0)
    await ok(
      await v.client.request('PATCH', withQuery('/v1/config', { 'default-operation': 'replace' }), {
        body: input.text,
        type: input.type,
      }),
      'apply',
    );
  for (const p of paths) v.out(`${p} ${touched.has(p) ? 'configured' : 'unchanged'}\n`);
  return 0;
}

/**
 * Exit 0: nothing would change; 1: something would; 2: trouble (as diff(1)), so a file that
 * cannot be read or a refused dry-run is never taken for "differences", and an unreadable file
 * exits 2 as it does for apply.
 */
export async function diff(v: Verb): Promise<number> {
  const input = readInput(v.flags.file, 'diff');
  xPaths(input.text); // the file is read here first, as apply reads it
  let impacted: Impacted[];
  try {
    impacted = (await dryRun(v, input.text, input.type)).filter(changed);
  } catch (e) {
    if (e instanceof CliError && e.code === 1) throw new CliError(e.message, 2);
    throw e;
  }
  for (const i of impacted) {
    v.out(`~ ${i.path}\n`);
    for (const f of i.fields) {
      for (const d of f.deleted) v.out(`  - ${f.field}: ${d}\n`);
      for (const a of f.added) v.out(`  + ${f.field}: ${a}\n`);
    }
  }
  return impacted.length > 0 ? 1 : 0;
}
