/**
 * Path patterns of policy rules: '/'-separated, `*` matches exactly one component, `**`
 * matches any number of components (zero included, so `/v1/config/volga/**` also covers the
 * list `/v1/config/volga` itself). Wildcards are whole components; no partial globs.
 *
 * Specificity orders patterns component by component from the left: a literal beats `*`,
 * `*` beats `**`, and a pattern that has ended beats `**` (`/a` is more specific than `/a/**`).
 * The order depends on the patterns alone, so rules are sorted once when compiled.
 */
export type Segment = { kind: 'literal'; text: string } | { kind: 'one' } | { kind: 'any' };
export type PathPattern = { source: string; segments: Segment[] };

export type PatternProblem = { position: number; reason: string };

export function splitPath(path: string): string[] {
  return path.split('/').filter((s) => s !== '');
}

/** Parses a pattern, or returns where and why it is malformed. */
export function parsePattern(source: string): PathPattern | PatternProblem {
  if (!source.startsWith('/')) return { position: 0, reason: 'a path pattern starts with /' };
  const segments: Segment[] = [];
  let pos = 1;
  const parts = source.slice(1).split('/');
  for (const [i, part] of parts.entries()) {
    const last = i === parts.length - 1;
    if (part === '') {
      // Only the pattern '/' (the root) or a trailing '/' may produce an empty component.
      if (!(last && (source === '/' || i > 0))) return { position: pos, reason: 'empty path component (//)' };
    } else if (part === '*') segments.push({ kind: 'one' });
    else if (part === '**') segments.push({ kind: 'any' });
    else {
      const star = part.indexOf('*');
      if (star >= 0) return { position: pos + star, reason: '* and ** must be a whole path component' };
      segments.push({ kind: 'literal', text: part });
    }
    pos += part.length + 1;
  }
  return { source, segments };
}

export function isProblem(p: PathPattern | PatternProblem): p is PatternProblem {
  return 'reason' in p;
}

/** Does the pattern match these path components? Dynamic programming: no backtracking blow-up. */
export function matches(pattern: PathPattern, path: readonly string[]): boolean {
  const segs = pattern.segments;
  // ok[j]: the first i pattern segments match the first j path components.
  let ok: boolean[] = Array.from({ length: path.length + 1 }, (_, j) => j === 0);
  for (const seg of segs) {
    const next: boolean[] = new Array<boolean>(path.length + 1).fill(false);
    for (let j = 0; j <= path.length; j++) {
      if (seg.kind === 'any') next[j] = (ok[j] ?? false) || (j > 0 && (next[j - 1] ?? false));
      else if (j > 0 && ok[j - 1]) next[j] = seg.kind === 'one' || seg.text === path[j - 1];
    }
    ok = next;
  }
  return ok[path.length] ?? false;
}

const rank = { literal: 2, one: 1, any: 0 } as const;
/** A pattern that has ended at this position: more specific than `**` there. */
const ended = 3;

/** Negative when `a` is more specific than `b`, positive when less, 0 when equally specific. */
export function compareSpecificity(a: PathPattern, b: PathPattern): number {
  const n = Math.max(a.segments.length, b.segments.length);
  for (let i = 0; i < n; i++) {
    const sa = a.segments[i];
    const sb = b.segments[i];
    const ra = sa ? rank[sa.kind] : ended;
    const rb = sb ? rank[sb.kind] : ended;
    if (ra !== rb) return rb - ra;
  }
  return 0;
}
