/**
 * A resource's paths and store keys, derived from its segments (module.ts): the one place
 * that knows that a webhook lives at `volga/webhooks/<name>` and a secret at
 * `strongbox/vaults/<vault>/secrets/<name>`, so no other layer writes a resource path or a
 * store-key regex of its own.
 *
 * `names` fill the segments' `:x` holes in order, then (for a list) name the item: for the
 * secrets list, `pathOf('hooks', 'sink')` is `strongbox/vaults/hooks/secrets/sink` and
 * `pathOf('hooks')` the list `strongbox/vaults/hooks/secrets`. A hole without a name stays as
 * written (`:vault`), which makes a route template: `pathOf(':name')`.
 */
import { configKey } from '../store/keys.js';

/** The parts of a store key of a resource's object: its tenant, the names that fill the holes, then its own. */
export type KeyParts = {
  tenant: string;
  /** The enclosing keys, then the item's name (list resources); empty for a singleton. */
  names: string[];
  /** The item's name (the last of `names`); undefined for a singleton. */
  name: string | undefined;
};

export type ResourcePaths = {
  /** The configuration path (below /v1/config/, no leading slash) of the object or list `names` address. */
  pathOf(...names: string[]): string;
  /** The store key of the same in `tenant`'s tree. */
  keyOf(tenant: string, ...names: string[]): string;
  /** The parts of a store key of one of this resource's objects; undefined for any other key. */
  parseKey(key: string): KeyParts | undefined;
  /** The shape of the store keys of this resource's objects, for `anyKeyOf`. */
  readonly keyShape: RegExp;
};

/**
 * One test for "is this the key of an object of any of `rs`" (a change notification asks it of
 * every key it carries, so it is one regex and allocates nothing).
 */
export function anyKeyOf(rs: ReadonlyArray<Pick<ResourcePaths, 'keyShape'>>): (key: string) => boolean {
  const shape = new RegExp(rs.map((r) => `(?:${r.keyShape.source})`).join('|'));
  return (key) => shape.test(key);
}

export function pathsOf(segments: readonly string[], shape: 'list' | 'object'): ResourcePaths {
  // These run on hot paths (every change notification asks several resources whether a key
  // is theirs), so the shape is compiled once: a plain loop for paths, one regex for keys.
  const holes = segments.map((s) => s.startsWith(':'));
  const pathOf = (...names: string[]): string => {
    let i = 0;
    let path = '';
    for (const [j, s] of segments.entries()) {
      const part = holes[j] && i < names.length ? (names[i++] as string) : s;
      path = j === 0 ? part : `${path}/${part}`;
    }
    for (; i < names.length; i++) path = path === '' ? (names[i] as string) : `${path}/${names[i]}`;
    return path;
  };
  const name = '([^/]+)';
  const keyShape = new RegExp(
    `^${name}/${[...segments.map((s, j) => (holes[j] ? name : escapeRegex(s))), ...(shape === 'list' ? [name] : [])].join('/')}$`,
  );
  return {
    pathOf,
    keyShape,
    keyOf: (tenant, ...names) => configKey(tenant, pathOf(...names)),
    parseKey(key) {
      const m = keyShape.exec(key);
      if (!m) return undefined;
      const [, tenant, ...names] = m as unknown as [string, string, ...string[]];
      return { tenant, names, name: shape === 'list' ? names.at(-1) : undefined };
    },
  };
}

const escapeRegex = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
