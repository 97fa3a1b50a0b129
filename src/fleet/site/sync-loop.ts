/**
 * The edge site's sync loop, modelled on Kubernetes' reflector (ListAndWatch): one loop, one
 * remembered version. It dials out to the control plane's sync route (no inbound port at the
 * edge), sending the version it has as `Last-Event-ID`; a `reset` + `snapshot` replaces every
 * synced object, a `change` applies one entry. Each is applied together with its version in
 * ONE local store commit (the sync record of managed.ts, guarded by its ETag), so a crash
 * between the two cannot lose or repeat a change, and an entry at or below the recorded
 * version is skipped. When the stream ends or fails it reconnects after an exponential
 * back-off with jitter (half to all of min(max, base × 2^attempt)), reset after an event.
 * While disconnected, the site keeps running on what it applied, across its own restarts.
 * Each request presents the site's public key (site-key.ts): secrets arrive sealed for it and
 * are stored as they came.
 *
 * A `bookmark` (the version the stream is at) is recorded like an empty entry: the resume point
 * of an idle site stays current. A `request` (a `site=` read at the control plane) is answered
 * with the site's own state routes and POSTed back to `/answer`, beside the loop (a slow read
 * never holds up changes). The site's state goes up by `/report` (reporter.ts): in full on each
 * connection, then when it changes.
 */
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import type { Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { Agent, fetch as undiciFetch } from 'undici';
import { startAcker, type Acker } from './acker.js';
import { etagOf } from '../../store/etag.js';
import type { Store, WriteOp } from '../../store/store.js';
import { isObject, type JsonObject } from '../../lib/json.js';
import { log } from '../../lib/log.js';
import { compareVersions, siteKeyHeader, type FleetChange } from '../common/protocol.js';
import { readSyncRecord, syncRecordKey, type ManagedKeys } from './managed.js';
import { forwardedRules, type ForwardedAnswer, type ForwardedRead } from '../../api/deps.js';
import { startReporter, type Reporter } from './reporter.js';
import { backoffDelay } from '../../lib/backoff.js';
import { errorChainText } from '../../lib/error-text.js';

/** What the rest of the site gives the sync loop (server.ts builds them once the app exists). */
export type SiteHooks = {
  /** Answers a forwarded read with the site's own state routes. */
  read(read: Omit<ForwardedRead, 'id'>): Promise<ForwardedAnswer>;
  /** The site's state as it reports it: per tenant, its state objects. */
  report(): Promise<JsonObject>;
  /** Calls `listener` when the reported state may have changed; returns the unsubscribe. */
  onChange(listener: () => void): () => void;
};

export type SiteSyncOptions = {
  url: string;
  site: string;
  token: string;
  /** PEM of the CA for an https control plane. */
  ca?: string | undefined;
  /** Where changes are applied: the site's own store (storeTarget), or any other SyncTarget. */
  target: SyncTarget;
  /** The site's public key (site-key.ts), sent with each sync request; throws while it cannot be had. */
  publicKey: () => Promise<string>;
  /** Jitter source in [0, 1) (tests inject one). */
  random?: () => number;
  baseBackoffMs?: number;
  maxBackoffMs?: number;
  hooks?: SiteHooks | undefined;
  /** The least time between two state reports (FLEET_REPORT_INTERVAL). */
  reportIntervalMs?: number;
  /**
   * Silence on the stream after which the link is taken as dead and the site dials again: the
   * control plane sends a bookmark after each FLEET_KEEPALIVE of quiet, so the site gives it
   * three (role.ts). Default 300 s (undici's body timeout).
   */
  idleTimeoutMs?: number;
  /** Waits before a reconnection (tests inject one that records the delay and returns at once). */
  sleep?: (ms: number) => Promise<void>;
  /**
   * Where acknowledgements go (FLEET_ACKS): `stream` (default), in the sync request's own body
   * (a POST whose body streams as long as the stream: no connection an acknowledgement);
   * `post`, a GET stream and one POST an acknowledgement, for a proxy that buffers request bodies.
   */
  acks?: 'stream' | 'post';
};

/**
 * Where a site applies what it receives, each change together with its version. The product's
 * is the site's store (storeTarget); the fleet bench gives each simulated site a map in memory.
 */
export type SyncTarget = {
  /** The last version applied (undefined: never synced); read at each (re)connection. */
  load(): Promise<string | undefined>;
  /** Applies one entry and records its version in one step; false when that version was already applied. */
  applyEntry(version: string, changes: FleetChange[]): Promise<boolean>;
  /** Replaces every synced object by the snapshot and records its version in one step. */
  applySnapshot(version: string, objects: Map<string, JsonObject>): Promise<void>;
};

export type SiteSync = {
  connected(): boolean;
  stop(): Promise<void>;
};

const maxCommitAttempts = 10;

/** Applies one entry and records its version, in one commit; skips a version already applied. */
export async function applyEntry(store: Store, version: string, changes: FleetChange[]): Promise<string[] | undefined> {
  for (let attempt = 0; attempt < maxCommitAttempts; attempt++) {
    const entry = await store.get(syncRecordKey, { fresh: true });
    const rec = readSyncRecord(entry?.value);
    if (rec && compareVersions(version, rec.version) <= 0) return undefined;
    const keys = new Set(rec?.keys ?? []);
    const ops: WriteOp[] = [];
    for (const c of changes) {
      if (c.op === 'put') {
        ops.push({ op: 'put', key: c.key, value: c.value });
        keys.add(c.key);
      } else {
        ops.push({ op: 'delete', key: c.key });
        keys.delete(c.key);
      }
    }
    const sorted = [...keys].sort();
    ops.push({ op: 'put', key: syncRecordKey, value: { version, keys: sorted }, expect: entry ? entry.etag : null });
    if ((await store.commit(ops)).ok) return sorted;
  }
  throw new Error(`could not apply change ${version}: the sync record kept changing`);
}

/** Replaces every synced object by the snapshot and records its version, in one commit. */
export async function applySnapshot(
  store: Store,
  version: string,
  objects: Map<string, JsonObject>,
): Promise<string[]> {
  for (let attempt = 0; attempt < maxCommitAttempts; attempt++) {
    const entry = await store.get(syncRecordKey, { fresh: true });
    const rec = readSyncRecord(entry?.value);
    const ops: WriteOp[] = [];
    for (const key of rec?.keys ?? []) if (!objects.has(key)) ops.push({ op: 'delete', key });
    const current = await Promise.all([...objects.keys()].map((k) => store.get(k, { fresh: true })));
    [...objects].forEach(([key, value], i) => {
      if (current[i]?.etag !== etagOf(value)) ops.push({ op: 'put', key, value });
    });
    const keys = [...objects.keys()].sort();
    ops.push({ op: 'put', key: syncRecordKey, value: { version, keys }, expect: entry ? entry.etag : null });
    if ((await store.commit(ops)).ok) return keys;
  }
  throw new Error(`could not apply snapshot ${version}: the sync record kept changing`);
}

/** The site's own store (not the read-only view) as the target; `managed` follows each commit. */
export function storeTarget(store: Store, managed: ManagedKeys): SyncTarget {
  return {
    async load() {
      await managed.load(store);
      return managed.version;
    },
    async applyEntry(version, changes) {
      const keys = await applyEntry(store, version, changes);
      if (keys) managed.set({ version, keys });
      return keys !== undefined;
    },
    async applySnapshot(version, objects) {
      managed.set({ version, keys: await applySnapshot(store, version, objects) });
    },
  };
}

function parseChanges(data: string): FleetChange[] {
  const doc = JSON.parse(data) as unknown;
  const list = isObject(doc) && Array.isArray(doc.changes) ? doc.changes : [];
  const out: FleetChange[] = [];
  for (const c of list) {
    if (!isObject(c) || typeof c.key !== 'string') throw new Error('malformed change');
    if (c.op === 'put' && isObject(c.value)) out.push({ op: 'put', key: c.key, value: c.value });
    else if (c.op === 'delete') out.push({ op: 'delete', key: c.key });
    else throw new Error(`malformed change of ${c.key}`);
  }
  return out;
}

function parseSnapshot(data: string): Map<string, JsonObject> {
  const doc = JSON.parse(data) as unknown;
  const out = new Map<string, JsonObject>();
  if (!isObject(doc) || !Array.isArray(doc.objects)) throw new Error('malformed snapshot');
  for (const o of doc.objects) {
    if (!isObject(o) || typeof o.key !== 'string' || !isObject(o.value)) throw new Error('malformed snapshot object');
    out.set(o.key, o.value);
  }
  return out;
}

/** Answers a `site=` read from the control plane beside the loop. */
function answerRead(
  hooks: NonNullable<SiteSyncOptions['hooks']>,
  post: (route: string, body: unknown) => ReturnType<typeof undiciFetch>,
  site: string,
  data: string,
): void {
  void (async () => {
    const doc = JSON.parse(data) as unknown;
    if (!isObject(doc) || typeof doc.id !== 'string') return;
    const { id, tenant, path, query } = doc;
    if (typeof tenant !== 'string' || typeof path !== 'string' || typeof query !== 'string') return;
    const a = await hooks.read({ tenant, path, query, ...forwardedRules(doc.rules) });
    const res = await post('answer', { id, status: a.status, body: a.body });
    await res.body?.cancel();
  })().catch((err: unknown) =>
    // The control plane answers from the last report after its wait.
    log('warn', 'fleet: could not answer a read from the control plane', {
      site,
      error: errorChainText(err),
    }),
  );
}

/** Feeds a sync stream's body through the SSE parser to `handle`; true when an event arrived. */
async function readEvents(body: Readable, handle: (ev: EventSourceMessage) => Promise<void>): Promise<boolean> {
  let progressed = false;
  const events: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (ev) => events.push(ev) });
  // undici's body gives Buffers whatever its encoding; a character may straddle two of them.
  const decoder = new StringDecoder('utf8');
  for await (const chunk of body) {
    parser.feed(decoder.write(chunk as Buffer));
    while (events.length > 0) {
      await handle(events.shift()!);
      progressed = true;
    }
  }
  return progressed;
}

/** The site's report to the control plane: sent on its changes, at most every `minIntervalMs`. */
function startHooksReporter(
  hooks: NonNullable<SiteSyncOptions['hooks']>,
  post: (route: string, body: unknown) => ReturnType<typeof undiciFetch>,
  minIntervalMs: number,
): { reporter: Reporter; stopChanges: () => void } {
  const reporter = startReporter({
    build: async () => ({ tenants: await hooks.report() }),
    send: async (report) => {
      const res = await post('report', report).catch(() => undefined);
      await res?.body?.cancel();
      return res?.status === 204;
    },
    minIntervalMs,
  });
  return { reporter, stopChanges: hooks.onChange(() => reporter.changed()) };
}

/**
 * Opens the sync stream (resuming from `version`); throws unless the control plane answers 200.
 * With undici's `request` and Node streams, not `fetch`: fetch's web streams (a promise and a
 * reader step per chunk each way) were ~15 % of a simulated site's CPU in the fleet bench.
 */
async function openStream(
  o: SiteSyncOptions,
  agent: Agent,
  publicKey: string,
  version: string | undefined,
  signal: AbortSignal,
  acksBody: Readable | undefined,
): Promise<Readable | 'no-duplex'> {
  const headers: Record<string, string> = {
    authorization: `Bearer ${o.token}`,
    accept: 'text/event-stream',
    [siteKeyHeader]: publicKey,
  };
  if (version) headers['last-event-id'] = version;
  if (acksBody) headers['content-type'] = 'text/plain';
  const url = new URL(`${o.url}/v1/fleet/sites/${encodeURIComponent(o.site)}/sync`);
  const res = await agent.request({
    origin: url.origin,
    path: url.pathname,
    method: acksBody ? 'POST' : 'GET',
    headers,
    signal,
    ...(acksBody ? { body: acksBody } : {}),
  });
  // A control plane without the POST route (an older release): the GET stream and POSTed acks.
  if (acksBody && (res.statusCode === 404 || res.statusCode === 405)) {
    await res.body.dump().catch(() => undefined);
    return 'no-duplex';
  }
  if (res.statusCode !== 200) {
    const text = await res.body.text().catch(() => '');
    // A URL with a path (…/v1) reaches a route of the user API, whose refusal would send the
    // operator after a good token.
    const hint =
      new URL(o.url).pathname.replace(/\/+$/, '') !== '' && (res.statusCode === 401 || res.statusCode === 404)
        ? ` (CONTROL_PLANE_URL has the path ${new URL(o.url).pathname}: name the control plane's base URL, scheme, host and port, e.g. https://cp.example:4646)`
        : '';
    throw new Error(`control plane answered ${res.statusCode}: ${text.slice(0, 300)}${hint}`);
  }
  return res.body;
}

/**
 * Opens the stream: a POST whose body carries the acknowledgements while `mode.duplex`; a GET
 * otherwise, and from then on at a control plane without that route (an earlier release).
 */
async function openSync(
  o: SiteSyncOptions,
  agent: Agent,
  publicKey: string,
  version: string | undefined,
  signal: AbortSignal,
  acks: Acker,
  mode: { duplex: boolean },
) {
  if (mode.duplex) {
    const body = await openStream(o, agent, publicKey, version, signal, acks.open());
    if (body !== 'no-duplex') return body;
    acks.close();
    mode.duplex = false;
    log('info', 'fleet: the control plane takes no acknowledgements in the sync request; posting each', {
      site: o.site,
    });
  }
  const body = await openStream(o, agent, publicKey, version, signal, undefined);
  if (body === 'no-duplex') throw new Error('control plane answered 404 to the sync request');
  return body;
}

/** Applies one event of the sync stream to the site and acknowledges what it applied. */
async function applyEvent(
  o: SiteSyncOptions,
  acks: Acker,
  answer: (data: string) => void,
  ev: EventSourceMessage,
): Promise<void> {
  const { ack, known } = acks;
  if (ev.event === 'request') return answer(ev.data);
  if (ev.event === 'bookmark' && ev.id) {
    // Recorded like an empty entry (skipped when the site already has it), and acknowledged
    // unless the control plane has that version already: an idle site's bookmarks then cost
    // the stream's few bytes and no request (the stream itself keeps its presence current).
    await o.target.applyEntry(ev.id, []);
    if (!known(ev.id)) ack(ev.id);
  } else if (ev.event === 'change' && ev.id) {
    const changes = parseChanges(ev.data);
    if (await o.target.applyEntry(ev.id, changes))
      log('info', 'fleet: applied change', { site: o.site, version: ev.id, objects: changes.length });
    ack(ev.id);
  } else if (ev.event === 'snapshot' && ev.id) {
    const objects = parseSnapshot(ev.data);
    await o.target.applySnapshot(ev.id, objects);
    log('info', 'fleet: applied snapshot', { site: o.site, version: ev.id, objects: objects.size });
    ack(ev.id);
  }
  // `reset` only announces the snapshot that follows; unknown events are ignored.
}

/** POSTs a JSON body to one of the site's routes (`report`, `answer`). */
function sitePost(o: SiteSyncOptions, agent: Agent) {
  return (route: string, body: unknown) =>
    undiciFetch(`${o.url}/v1/fleet/sites/${encodeURIComponent(o.site)}/${route}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${o.token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      dispatcher: agent,
    });
}

/** The link's log lines: each failed attempt (warn), and the end of a run of them (info). */
function linkLog(site: string) {
  let failed = 0;
  return {
    failed(err: unknown): void {
      failed++;
      log('warn', 'fleet: sync with the control plane failed; keeping the last applied configuration', {
        site,
        error: errorChainText(err),
      });
    },
    connected(): void {
      if (failed > 0) log('info', 'fleet: connected to the control plane again', { site, 'failed-attempts': failed });
      failed = 0;
    },
  };
}

/** A sleep that `wake` ends early (the back-off between attempts, cut short by a stop). */
function wakeableSleep(): { sleep(ms: number): Promise<void>; wake(): void } {
  let wake: (() => void) | undefined;
  return {
    sleep: (ms) =>
      new Promise<void>((resolve) => {
        const t = setTimeout(resolve, ms);
        wake = () => {
          clearTimeout(t);
          resolve();
        };
      }),
    wake: () => wake?.(),
  };
}

export function startSiteSync(o: SiteSyncOptions): SiteSync {
  const random = o.random ?? Math.random;
  const base = o.baseBackoffMs ?? 500;
  const max = o.maxBackoffMs ?? 30_000;
  // bodyTimeout: a stream silent for idleTimeoutMs (no change, no bookmark) is a dead link.
  const agent = new Agent({ bodyTimeout: o.idleTimeoutMs ?? 300_000, ...(o.ca ? { connect: { ca: o.ca } } : {}) });
  let stopped = false;
  let connected = false;
  let current: AbortController | undefined;
  const nap = wakeableSleep();

  const acks = startAcker(
    { url: new URL(`${o.url}/v1/fleet/sites/${encodeURIComponent(o.site)}/ack`), token: o.token, ca: o.ca },
    () => stopped,
  );

  const post = sitePost(o, agent);

  const hooks = o.hooks;
  const { reporter, stopChanges } = hooks
    ? startHooksReporter(hooks, post, o.reportIntervalMs ?? 500)
    : { reporter: undefined, stopChanges: undefined };

  /** A `site=` read from the control plane: answered beside the loop. */
  const answer = (data: string) => {
    if (hooks) answerRead(hooks, post, o.site, data);
  };

  /** Events the current stream delivered (a change, a bookmark, a read): it worked, whatever ends it. */
  let streamEvents = 0;
  const handle = (ev: EventSourceMessage) => {
    streamEvents++;
    return applyEvent(o, acks, answer, ev);
  };

  /** Acknowledgements in the sync request's body (FLEET_ACKS=stream), until a control plane lacks the route. */
  const mode = { duplex: (o.acks ?? 'stream') === 'stream' };

  const link = linkLog(o.site);

  async function once(): Promise<boolean> {
    const version = await o.target.load();
    const publicKey = await o.publicKey();
    const abort = new AbortController();
    current = abort;
    try {
      const body = await openSync(o, agent, publicKey, version, abort.signal, acks, mode);
      connected = true;
      link.connected();
      // The control plane records the Last-Event-ID a stream resumes from as applied.
      if (version) acks.setAcked(version);
      reporter?.connected();
      return await readEvents(body, handle);
    } finally {
      acks.close();
    }
  }

  const loop = (async () => {
    let attempt = 0;
    while (!stopped) {
      streamEvents = 0;
      try {
        await once();
        if (!stopped) log('info', 'fleet: the control plane closed the sync stream; reconnecting', { site: o.site });
      } catch (err) {
        if (stopped) break;
        link.failed(err);
      }
      // A stream that delivered events worked: the back-off starts again, whether it was closed
      // or broke (a control-plane restart), so earlier outages do not slow this reconnection.
      if (streamEvents > 0) attempt = 0;
      connected = false;
      if (stopped) break;
      // Half to all of min(max, base × 2^attempt) (attempt is 0 after a stream that delivered
      // events), so sites cut off together (a control-plane restart) do not dial back at one instant.
      await (o.sleep ?? nap.sleep)(backoffDelay(attempt, { baseMs: base, maxMs: max, jitter: 'equal' }, random));
      attempt++;
    }
  })();

  return {
    connected: () => connected,
    async stop() {
      stopped = true;
      stopChanges?.();
      // The control plane keeps the state of a site that stopped cleanly as it was at the stop.
      if (connected) await reporter?.flush(2000);
      reporter?.stop();
      current?.abort();
      nap.wake();
      await loop;
      await agent.close().catch(() => undefined);
    },
  };
}
