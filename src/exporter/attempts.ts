/**
 * The attempt log of one exporter: its last 100 POST attempts, newest first, each
 * `{time, topic, seqno, attempt, status | error, duration-ms}` plus `body`, the first 200
 * bytes of a failing response. Kept in the store's kv area (`attemptsKey`) so any process of
 * the site can show it. Cheap on the hot path: an attempt is one small object pushed to an
 * array; the log is written at most every `flushMs` (one kv write, only when it changed),
 * and only the newest 100 are ever formatted.
 */
import type { Store } from '../store/store.js';
import type { JsonObject } from '../lib/json.js';
import { log } from '../lib/log.js';
import { errorText } from '../lib/error-text.js';

export const attemptLogSize = 100;
/** The log outlives its exporter's restarts; a deleted exporter's log is removed. */
const ttlMs = 7 * 24 * 3600_000;

/** `attempts:webhook:<tenant>/<name>` → JSON list, newest first. */
export const attemptsKey = (tenant: string, name: string): string => `attempts:webhook:${tenant}/${name}`;

type Raw = {
  time: number;
  topic: string;
  seqno: string;
  attempt: number;
  status: number | undefined;
  error: string | undefined;
  durationMs: number;
  body: string | undefined;
};

function format(r: Raw): JsonObject {
  const out: JsonObject = { time: new Date(r.time).toISOString(), topic: r.topic, seqno: r.seqno, attempt: r.attempt };
  if (r.status !== undefined) out.status = r.status;
  if (r.error !== undefined) out.error = r.error;
  out['duration-ms'] = Math.round(r.durationMs * 1000) / 1000;
  if (r.body !== undefined) out.body = r.body;
  return out;
}

export class AttemptLog {
  /** Newest last; trimmed to the last attemptLogSize at each flush (amortised). */
  private pending: Raw[] = [];
  private stored: JsonObject[] = [];
  private timer: NodeJS.Timeout | undefined;
  private loaded: Promise<void>;
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: Store,
    private readonly key: string,
    private readonly flushMs = 250,
  ) {
    // Continues the log of the exporter's earlier runs.
    this.loaded = store
      .kvGet(key)
      .then((raw) => {
        const v: unknown = raw ? JSON.parse(raw) : [];
        if (Array.isArray(v)) this.stored = v.slice(0, attemptLogSize) as JsonObject[];
      })
      .catch(() => undefined);
  }

  record(r: Raw): void {
    const p = this.pending;
    p.push(r);
    if (p.length > 4 * attemptLogSize) p.splice(0, p.length - attemptLogSize);
    if (!this.timer) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        void this.flush();
      }, this.flushMs);
      this.timer.unref();
    }
  }

  async flush(): Promise<void> {
    await this.loaded;
    const prev = this.writing;
    this.writing = (async () => {
      await prev;
      if (this.pending.length === 0) return;
      const fresh = this.pending.slice(-attemptLogSize).reverse().map(format);
      this.pending = [];
      this.stored = [...fresh, ...this.stored].slice(0, attemptLogSize);
      try {
        await this.store.kvSet(this.key, JSON.stringify(this.stored), ttlMs);
      } catch (err) {
        log('debug', 'exporter: cannot write the attempt log', { error: errorText(err) });
      }
    })();
    await this.writing;
  }

  async close(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.flush();
  }
}

/** The attempt log as the API shows it (empty when none was written). */
export async function readAttempts(store: Store, tenant: string, name: string): Promise<JsonObject[]> {
  const raw = await store.kvGet(attemptsKey(tenant, name));
  if (!raw) return [];
  try {
    const v: unknown = JSON.parse(raw);
    return Array.isArray(v) ? (v as JsonObject[]) : [];
  } catch {
    return [];
  }
}
