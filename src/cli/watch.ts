/**
 * `ctl watch <path>`: the objects the path reads, then each change, as the server streams
 * them (`?watch`). One JSON object a line by default (`-o json`), or YAML documents
 * (`-o yaml`); deletes are `{"x-path": ..., "x-operation": "delete"}`. A line on stderr marks
 * the end of the current objects. Runs until interrupted or the server ends the stream.
 */
import { CliError, ok } from './client.js';
import type { Verb } from './verb.js';
import { outputOf, render } from './output.js';
import { apiPath, withQuery } from './paths.js';
import { readEvents } from './sse.js';

export async function watch(v: Verb): Promise<number> {
  const p = apiPath(v.args[0], 'watch');
  if (v.flags.site !== undefined && p.area !== 'state')
    throw new CliError('watch: --site applies to state paths (state/...)', 2);
  const output = outputOf(v.flags.output, 'json');
  if (output === 'table') throw new CliError('watch: -o table is not a stream format: use json or yaml', 2);
  const path = withQuery(p.path, { watch: true, where: v.flags.where, fields: v.flags.fields, site: v.flags.site });
  const res = await ok(await v.client.request('GET', path, { accept: 'text/event-stream' }), `watch ${p.path}`);
  if (!res.body) throw new CliError(`watch ${p.path}: the server sent no stream`);
  for await (const e of readEvents(res.body)) {
    if (e.event === 'synced') {
      v.err(`-- ${(JSON.parse(e.data) as { count?: number }).count ?? 0} object(s); watching for changes\n`);
      continue;
    }
    if (e.event !== 'change') continue;
    const obj: unknown = JSON.parse(e.data);
    v.out(output === 'json' ? JSON.stringify(obj) + '\n' : '---\n' + render(obj, 'yaml'));
  }
  v.err(`watch ${p.path}: the server ended the stream\n`);
  return 1;
}
