/**
 * `edgeplane ctl rollout [resume|abort] <path>` at a control plane: the staged rollout of one
 * object (any object that reaches sites may carry `rollout`), read from its state (`rollout`:
 * the spec with the progress, `revision, wave, state, sites-updated, sites-total, reason`), or
 * resumed when paused, or aborted (every site gets the previous content back). Each is one
 * request of the API: `GET <state path>`, `POST <state path>/rollout/resume|abort`.
 */
import { CliError, ok } from './client.js';
import { outputOf, render } from './output.js';
import { apiPath } from './paths.js';
import type { Verb } from './verb.js';

const actions = ['resume', 'abort'] as const;
type Action = (typeof actions)[number];

/**
 * The object's state path from what the user typed (`volga/webhooks/w`, `config/...`,
 * `state/...`); a bare name is an exporter's, as `ctl restart <name>` takes it.
 */
function statePathOf(arg: string | undefined): string {
  if (arg !== undefined && arg !== '' && !arg.includes('/'))
    return `/v1/state/volga/webhooks/${encodeURIComponent(arg)}`;
  const p = apiPath(arg, 'rollout');
  if (p.area === 'other') throw new CliError(`rollout: ${arg ?? ''} is not a configuration or state path`, 2);
  return p.area === 'config' ? p.path.replace(/^\/v1\/config\//, '/v1/state/') : p.path;
}

export async function rollout(v: Verb): Promise<number> {
  const [first, second] = v.args;
  if (second === undefined && (actions as readonly string[]).includes(first ?? ''))
    throw new CliError(`rollout ${first}: give the object, e.g. ctl rollout ${first} volga/webhooks/<name>`, 2);
  const action = second === undefined ? undefined : first;
  if (action !== undefined && !(actions as readonly string[]).includes(action))
    throw new CliError(`rollout: ${JSON.stringify(action)} is not one of ${actions.join(', ')}`, 2);
  const target = second ?? first;
  const path = statePathOf(target);
  if (action) {
    const res = await v.client.request('POST', `${path}/rollout/${action}`);
    if (res.status === 404 && (await res.clone().text()).includes('"unknown-path"'))
      // Only a control plane serves the rollout operations (an edge site, or a process of its own, does not).
      throw new CliError(
        `rollout ${action} ${target}: ${v.client.url} serves no rollouts: staged rollouts run at a control plane (set EDGEPLANE_URL to it)`,
      );
    await ok(res, `rollout ${action} ${target}`);
    const done: Record<Action, string> = {
      resume: 'resumed',
      abort: 'aborted: every site gets the previous content back',
    };
    v.err(`rollout of ${target} ${done[action as Action]}\n`);
    return 0;
  }
  const res = await ok(await v.client.request('GET', path), `read ${target}`);
  const state = (await res.json()) as { rollout?: unknown };
  const r = state.rollout;
  if (!r || typeof r !== 'object' || typeof (r as { state?: unknown }).state !== 'string')
    throw new CliError(
      `${target} has no staged rollout here (an object with rollout: {...}, read at the control plane)`,
      1,
    );
  v.out(render(r, outputOf(v.flags.output, 'yaml')));
  return 0;
}
