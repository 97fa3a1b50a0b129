/**
 * What the projector knows of each site's log: its head, the configuration revision it
 * projects and the ETag of each object it holds; and, for each webhook exporter, the sites
 * whose log holds it. A commit of an exporter concerns the sites that hold it: with 10,000
 * sites, finding them by a look at every site's objects took ~10 ms an exporter, and a pass
 * that folded 20 commits held the event loop for 200 ms.
 */
import { webhook } from '../../resources/webhook/index.js';

export type Known = { version: string; rev: number; etags: Map<string, string> };

const none: ReadonlySet<string> = new Set();

/** The strings interned holds (keys and ETags of the objects sites hold), up to this many: then it starts over. */
const internedMax = 100_000;
const pool = new Map<string, string>();

/**
 * One instance of each key and ETag read from the sites' logs: 10,000 sites' sets read from
 * Redis (a second control-plane process, a restart) held 10,000 copies of the same few strings
 * (~0.5 KiB a site).
 */
export function interned(s: string): string {
  const known = pool.get(s);
  if (known !== undefined) return known;
  if (pool.size >= internedMax) pool.clear();
  pool.set(s, s);
  return s;
}

export class KnownLogs {
  private readonly bySite = new Map<string, Known>();
  /** Webhook exporter key → the sites whose log holds it (only exporters: the key `concerned` looks up). */
  private readonly holders = new Map<string, Set<string>>();

  get(site: string): Known | undefined {
    return this.bySite.get(site);
  }
  has(site: string): boolean {
    return this.bySite.has(site);
  }
  sites(): string[] {
    return [...this.bySite.keys()];
  }
  set(site: string, k: Known): void {
    const old = this.bySite.get(site);
    if (old) for (const key of old.etags.keys()) if (!k.etags.has(key)) this.release(key, site);
    for (const key of k.etags.keys()) if (!old?.etags.has(key)) this.hold(key, site);
    this.bySite.set(site, k);
  }
  /**
   * `site`'s log, known as `k`, took an entry: `changes` (puts and deletes of keys) with the
   * ETag each leaves (`etags[i]`, undefined for a delete). `k` is updated in place.
   */
  applied(
    site: string,
    k: Known,
    version: string,
    rev: number,
    changes: ReadonlyArray<{ op: 'put' | 'delete'; key: string }>,
    etags: ReadonlyArray<string | undefined>,
  ): void {
    // Forgotten meanwhile (a resync) or known anew: `k` is the site's entry again, held in full.
    const held = this.bySite.get(site) === k;
    if (!held) this.delete(site);
    changes.forEach((c, i) => {
      const etag = etags[i];
      if (c.op === 'put' && etag !== undefined) {
        if (held && !k.etags.has(c.key)) this.hold(c.key, site);
        k.etags.set(interned(c.key), etag);
      } else if (k.etags.delete(c.key) && held) this.release(c.key, site);
    });
    k.version = version;
    k.rev = rev;
    if (!held) for (const key of k.etags.keys()) this.hold(key, site);
    this.bySite.set(site, k);
  }
  delete(site: string): void {
    const old = this.bySite.get(site);
    if (!old) return;
    for (const key of old.etags.keys()) this.release(key, site);
    this.bySite.delete(site);
  }
  clear(): void {
    this.bySite.clear();
    this.holders.clear();
  }
  /** The sites whose log holds the webhook exporter at `key`. */
  holdersOf(key: string): ReadonlySet<string> {
    return this.holders.get(key) ?? none;
  }

  private hold(key: string, site: string): void {
    if (!webhook.keyShape.test(key)) return;
    let s = this.holders.get(key);
    if (!s) this.holders.set(key, (s = new Set()));
    s.add(site);
  }
  private release(key: string, site: string): void {
    const s = this.holders.get(key);
    if (!s) return;
    s.delete(site);
    if (s.size === 0) this.holders.delete(key);
  }
}
