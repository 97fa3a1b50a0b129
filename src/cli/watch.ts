/**
 * `ctl watch <path>`: the objects the path reads, then each change, as the server streams
 * them (`?watch`). One JSON object a line by default (`-o json`), or YAML documents
 * (`-o yaml`); deletes are `{"x-path": ..., "x-operation": "delete"}`. A line on stderr marks
 * the end of the current objects. Runs until interrupted: when the server ends the stream or
 * cannot be reached (a restart), it opens it again every `retryMs` (the current objects come
 * again, then `--` and the changes), and gives up after `giveUpMs` without a stream. A refusal
 * (4xx: the token expired or was revoked, the path is wrong) ends it.
 */
import { CliError, ok } from './client.js';
import type { Verb } from './verb.js';
import { outputOf, render } from './output.js';
import { apiPath, withQuery } from './paths.js';
import { readEvents } from './sse.js';

export type WatchTiming = { retryMs: number; giveUpMs: number };
const defaultTiming: WatchTiming = { retryMs: 1000, giveUpMs: 5 * 60_000 };

export async function watch(v: Verb, timing: WatchTiming = defaultTiming): Promise<number> {
  const p = apiPath(v.args[0], 'watch');
  if (v.flags.site !== undefined && p.area !== 'state')
    throw new CliError('watch: --site applies to state paths (state/...)', 2);
  const output = outputOf(v.flags.output, 'json');
  if (output === 'table') throw new CliError('watch: -o table is not a stream format: use json or yaml', 2);
  const path = withQuery(p.path, { watch: true, where: v.flags.where, fields: v.flags.fields, site: v.flags.site });
  let lastStream = Date.now();
  for (let opened = 0; ; opened++) {
    let ended: string;
    try {
      const res = await ok(await v.client.request('GET', path, { accept: 'text/event-stream' }), `watch ${p.path}`);
      if (!res.body) throw new CliError(`watch ${p.path}: the server sent no stream`);
      lastStream = Date.now();
      ended = await stream(v, res.body, output, opened > 0);
    } catch (err) {
      // A 4xx is an answer (expired token, wrong path): no point in asking again.
      if (!(err instanceof CliError) || !/cannot reach edgeplane/.test(err.message)) throw err;
      ended = err.message;
    }
    if (ended === 'expired') return 1;
    if (Date.now() - lastStream > timing.giveUpMs) {
      v.err(`watch ${p.path}: ${ended}; no stream for ${Math.round(timing.giveUpMs / 1000)} s, giving up\n`);
      return 1;
    }
    v.err(`watch ${p.path}: ${ended}; opening it again in ${timing.retryMs / 1000} s\n`);
    await new Promise((r) => setTimeout(r, timing.retryMs));
  }
}

/** Prints one stream's events; resolves with why it ended ('expired' when the server said so). */
async function stream(v: Verb, body: ReadableStream<Uint8Array>, output: string, again: boolean): Promise<string> {
  try {
    for await (const e of readEvents(body)) {
      if (e.event === 'synced') {
        const count = (JSON.parse(e.data) as { count?: number }).count ?? 0;
        v.err(
          `-- ${count} object(s)${again ? ' (opened again: the current objects above)' : ''}; watching for changes\n`,
        );
        continue;
      }
      if (e.event === 'expired') {
        const why = (JSON.parse(e.data) as { 'error-message'?: string })['error-message'] ?? 'the token expired';
        v.err(`watch: ${why}\n`);
        return 'expired';
      }
      if (e.event !== 'change') continue;
      const obj: unknown = JSON.parse(e.data);
      v.out(output === 'json' ? JSON.stringify(obj) + '\n' : '---\n' + render(obj, 'yaml'));
    }
  } catch {
    // The connection broke mid-stream (the server stopped): as an end.
  }
  return 'the server ended the stream';
}
