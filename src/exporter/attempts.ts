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
  /**
   * The attempts since the last flush: a ring of the last attemptLogSize, its records reused, so
   * an attempt leaves nothing behind that outlives it (at thousands of attempts a second, records
   * kept until the flush were copied by the young generation's collections and then promoted).
   */
  private readonly ring: Raw[] = [];
  /** Where the next attempt goes in `ring`, and how many of its slots hold attempts not flushed. */
  private ringNext = 0;
  private ringCount = 0;
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
    const slot = this.ring[this.ringNext];
    if (slot === undefined) this.ring[this.ringNext] = { ...r };
    else {
      slot.time = r.time;
      slot.topic = r.topic;
      slot.seqno = r.seqno;
      slot.attempt = r.attempt;
      slot.status = r.status;
      slot.error = r.error;
      slot.durationMs = r.durationMs;
      slot.body = r.body;
    }
    this.ringNext = (this.ringNext + 1) % attemptLogSize;
    if (this.ringCount < attemptLogSize) this.ringCount++;
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
      if (this.ringCount === 0) return;
      // Newest first, as the log is kept.
      const fresh: JsonObject[] = [];
      for (let k = 1; k <= this.ringCount; k++)
        fresh.push(format(this.ring[(this.ringNext - k + attemptLogSize) % attemptLogSize]!));
      this.ringCount = 0;
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
