/** Operations: `ctl produce <topic> [JSON | -f FILE]` and `ctl restart <webhook>`. */
import { parse } from 'yaml';
import { CliError, ok } from './client.js';
import { readInput, type Verb } from './verb.js';
import { webhook } from '../resources/webhook/index.js';
import { errorText } from '../lib/error-text.js';

export async function produce(v: Verb): Promise<number> {
  const [topic, inline] = v.args as [string, string | undefined];
  if (inline !== undefined && v.flags.file !== undefined)
    throw new CliError('produce: give the payload inline or with -f, not both', 2);
  const text = inline ?? readInput(v.flags.file, 'produce').text;
  let payload: unknown;
  try {
    payload = parse(text);
  } catch (e) {
    throw new CliError(`produce: the payload is not JSON or YAML: ${errorText(e)}`, 2);
  }
  const res = await ok(
    await v.client.request('POST', `/v1/state/volga/topics/${encodeURIComponent(topic)}/produce`, {
      body: JSON.stringify({ payload: payload ?? null, 'producer-name': 'edgeplane-ctl' }),
    }),
    `produce to ${topic}`,
  );
  const text2 = await res.text();
  if (text2.trim()) v.out(text2.endsWith('\n') ? text2 : text2 + '\n');
  return 0;
}

export async function restart(v: Verb): Promise<number> {
  const name = v.args[0] as string;
  await ok(
    await v.client.request('POST', `/v1/state/${webhook.pathOf(encodeURIComponent(name))}/restart`),
    `restart ${name}`,
  );
  v.err(`restarted webhook exporter ${name}\n`);
  return 0;
}
