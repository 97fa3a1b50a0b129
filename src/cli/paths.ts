/**
 * Paths as `ctl` verbs take them: `/v1/config/sites/a`, `config/sites/a`, `state/sites/a`, or
 * just `sites/a` (configuration). Each segment is percent-encoded.
 */
import { CliError } from './client.js';

export type ApiPath = { area: 'config' | 'state' | 'other'; path: string };

export function apiPath(arg: string | undefined, verb: string): ApiPath {
  if (arg === undefined || arg.trim() === '')
    throw new CliError(`${verb}: give a path, e.g. volga/webhooks or state/volga/webhooks/<name>`, 2);
  let p = arg.trim().replace(/^\/+/, '').replace(/\/+$/, '');
  if (p.startsWith('v1/')) p = p.slice(3);
  else if (p === 'v1') p = '';
  const first = p.split('/')[0];
  if (first !== 'config' && first !== 'state') p = p === '' ? 'config' : `config/${p}`;
  const area = p.startsWith('config') ? 'config' : p.startsWith('state') ? 'state' : 'other';
  return { area, path: '/v1/' + p.split('/').map(encodeURIComponent).join('/') };
}

/** Adds query parameters (those given) to a path. */
export function withQuery(path: string, params: Record<string, string | boolean | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === false) continue;
    q.append(k, v === true ? '' : v);
  }
  const s = q.toString().replace(/=(&|$)/g, '$1');
  return s ? `${path}?${s}` : path;
}
