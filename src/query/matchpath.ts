/**
 * `match-path`: a '/'-separated path where `*` matches exactly one component and
 * `**`, only as the last component, matches one or more further components. A leading '/' is
 * optional on both the pattern and the tested path; one trailing '/' is ignored.
 * `prefix` is the literal part before the first wildcard, so callers can narrow a store listing
 * instead of testing every object.
 */
import { queryError } from './error.js';

export type MatchPath = ((path: string) => boolean) & { readonly prefix: string; readonly source: string };

type Component = { text: string; pos: number };

function components(text: string): Component[] {
  let start = text.startsWith('/') ? 1 : 0;
  const end = text.length > start && text.endsWith('/') ? text.length - 1 : text.length;
  const out: Component[] = [];
  if (start >= end) return out;
  for (;;) {
    const slash = text.indexOf('/', start);
    const stop = slash < 0 || slash > end ? end : slash;
    out.push({ text: text.slice(start, stop), pos: start });
    if (stop >= end) return out;
    start = stop + 1;
  }
}

function split(path: string): string[] {
  const trimmed = path.replace(/^\/+/, '').replace(/\/$/, '');
  return trimmed === '' ? [] : trimmed.split('/');
}

export function compileMatchPath(text: string): MatchPath {
  const parts = components(text);
  if (parts.length === 0) throw queryError('match-path', 'empty', 0, 'the path has no component');
  parts.forEach((c, i) => {
    if (c.text === '')
      throw queryError('match-path', 'empty-component', c.pos, 'a path component is empty (two slashes in a row)');
    // Paths are matched as resolved: a dot-segment never appears in one.
    if (c.text === '.' || c.text === '..')
      throw queryError(
        'match-path',
        'dot-segment',
        c.pos,
        `a component is ${JSON.stringify(c.text)}: paths are matched as resolved, so it matches nothing`,
      );
    if (c.text === '**' && i !== parts.length - 1)
      throw queryError('match-path', 'descendant-not-last', c.pos, "'**' may only be the last component");
    const star = c.text.indexOf('*');
    if (star >= 0 && c.text !== '*' && c.text !== '**')
      throw queryError(
        'match-path',
        'partial-wildcard',
        c.pos + star,
        `'*' and '**' are whole components (${JSON.stringify(c.text)} matches nothing)`,
      );
  });
  const pattern = parts.map((c) => c.text);
  const last = pattern[pattern.length - 1];
  const descendants = last === '**';
  const fixed = descendants ? pattern.slice(0, -1) : pattern;
  const firstWild = pattern.findIndex((c) => c === '*' || c === '**');
  const literal = firstWild < 0 ? pattern : pattern.slice(0, firstWild);

  const test = (path: string): boolean => {
    const got = split(path);
    if (descendants ? got.length <= fixed.length : got.length !== fixed.length) return false;
    for (let i = 0; i < fixed.length; i++) {
      const want = fixed[i];
      if (want !== '*' && want !== got[i]) return false;
    }
    return true;
  };
  return Object.assign(test, { prefix: '/' + literal.join('/'), source: text });
}

/**
 * A read answers objects under one root (`/v1/config` or `/v1/state`): a path whose leading
 * literal components name another (`volga/webhooks/*` without its root, `/v1/state/...` on
 * /v1/config) could match nothing, and is a 400 rather than an empty answer.
 */
export function checkRoot(m: MatchPath, root: string): void {
  const want = split(root);
  const got = components(m.source);
  for (let i = 0; i < want.length && i < got.length; i++) {
    const c = got[i]!;
    if (c.text === '*') continue;
    if (c.text === '**') return;
    if (c.text !== want[i])
      throw queryError(
        'match-path',
        'outside-root',
        c.pos,
        `the path must start with ${root}: this read answers objects under it`,
      );
  }
}
