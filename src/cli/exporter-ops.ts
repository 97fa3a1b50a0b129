/**
 * Operator verbs of `edgeplane ctl` for exporters and the configuration history:
 *   pause <webhook>              enabled: false (offsets kept)
 *   resume <webhook>             enabled: true
 *   rewind <webhook> <to>        beginning | end | <seqno> | <ISO time>
 *   attempts <webhook>           the last 100 POST attempts, newest first (--site, -o)
 *   dead-letter <webhook>        the exporter's dead-letter topic: its state (length, last entry)
 *   rollback <revision>          every object changed after it back as it was (--dry-run)
 * Each is one request of the API; what it prints comes from the reply.
 */
import { CliError, ok } from './client.js';
import { outputOf, render } from './output.js';
import { withQuery } from './paths.js';
import type { Verb } from './verb.js';

const hookPath = (area: 'config' | 'state', name: string) => `/v1/${area}/volga/webhooks/${encodeURIComponent(name)}`;

async function setEnabled(v: Verb, enabled: boolean): Promise<number> {
  const name = v.args[0] as string;
  await ok(
    await v.client.request('PATCH', hookPath('config', name), { body: JSON.stringify({ enabled }) }),
    `${enabled ? 'resume' : 'pause'} ${name}`,
  );
  v.err(`webhook exporter ${name} ${enabled ? 'resumed' : 'paused'}\n`);
  return 0;
}

export const pause = (v: Verb) => setEnabled(v, false);
export const resume = (v: Verb) => setEnabled(v, true);

export async function rewind(v: Verb): Promise<number> {
  const [name, to] = v.args as [string, string];
  await ok(
    await v.client.request('POST', `${hookPath('state', name)}/rewind`, { body: JSON.stringify({ to }) }),
    `rewind ${name}`,
  );
  v.err(`webhook exporter ${name} rewound to ${to}\n`);
  return 0;
}

export async function attempts(v: Verb): Promise<number> {
  const name = v.args[0] as string;
  const res = await ok(
    await v.client.request('GET', withQuery(`${hookPath('state', name)}/attempts`, { site: v.flags.site })),
    `attempts of ${name}`,
  );
  v.out(render(await res.json(), outputOf(v.flags.output, 'table')));
  return 0;
}

export async function deadLetter(v: Verb): Promise<number> {
  const name = v.args[0] as string;
  const cfg = (await (await ok(await v.client.request('GET', hookPath('config', name)), `read ${name}`)).json()) as {
    'dead-letter-topic'?: unknown;
  };
  const topic = cfg['dead-letter-topic'];
  if (typeof topic !== 'string')
    throw new CliError(`webhook exporter ${name} has no dead-letter-topic (set one to keep what it drops)`, 1);
  const read = await v.client.request(
    'GET',
    withQuery(`/v1/state/volga/topics/${encodeURIComponent(topic)}`, { site: v.flags.site }),
  );
  if (read.status === 404) {
    // The topic is made by the first message dropped into it: none yet is an empty topic, not a failure.
    v.err(`dead-letter topic ${topic} of ${name} is empty: nothing dropped yet\n`);
    v.out(render({ name: topic, length: 0 }, outputOf(v.flags.output, 'yaml')));
    return 0;
  }
  const res = await ok(read, `read dead-letter topic ${topic}`);
  v.out(render(await res.json(), outputOf(v.flags.output, 'yaml')));
  return 0;
}

export async function rollback(v: Verb): Promise<number> {
  const to = v.args[0] as string;
  if (!/^\d+$/.test(to))
    throw new CliError(
      `rollback: ${JSON.stringify(to)} is not a revision number (ctl get state/config-revisions lists them)`,
      2,
    );
  const res = await ok(
    await v.client.request('POST', withQuery('/v1/config/rollback', { 'dry-run': v.flags['dry-run'] }), {
      body: JSON.stringify({ to: Number(to) }),
    }),
    `rollback to ${to}`,
  );
  const body = (await res.json()) as { revision?: number };
  if (v.flags['dry-run']) v.out(render(body, outputOf(v.flags.output, 'yaml')));
  else v.err(`rolled back to revision ${to}: now revision ${String(body.revision)}\n`);
  return 0;
}
