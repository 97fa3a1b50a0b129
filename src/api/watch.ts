/**
 * `?watch` on a /v1/config or /v1/state read: a Server-Sent Events stream of the objects the
 * same read would answer (one object or a list, `where` and `fields` applied), then of each
 * change: `event: change` with the object and its `x-path`, or `{x-path, x-operation: delete}`
 * when it is gone or no longer matches `where`. After the current objects one `event: synced`
 * (`{"count": N}`) tells a client that what follows are changes. A comment line keeps idle
 * connections open (every 10 s by default). When the token expires, `event: expired` ends the
 * stream.
 *
 * One hub per store subscribes once to the store's change notifications (and to the exporter
 * runtime's state publications) and fans them out to the watchers; a notified watcher re-runs
 * its read and sends the difference from what it sent before. Notifications that arrive while
 * it reads are coalesced into one more read, so a burst of commits costs a watcher two reads.
 */
import { streamSSE, type SSEStreamingApi } from 'hono/streaming';
import { canonicalJson, isObject, type Json, type JsonObject } from '../lib/json.js';
import { log } from '../lib/log.js';
import { ApiError } from '../lib/errors.js';
import type { Store } from '../store/store.js';
import type { AppDeps } from './deps.js';
import type { Ctx } from './http.js';
import { permissionsOf } from '../auth/principal.js';
import { errorText } from '../lib/error-text.js';

/** One object of a read: its `/v1/...` path and the value the read answers for it. */
export type WatchedObject = { xPath: string; value: Json };

export type WatchSpec = {
  /** Whether a change of these store keys may change the answer. */
  relevant: (keys: readonly string[]) => boolean;
  /** Exporter state publications matter too (state reads). */
  runtimeState: boolean;
  /** The objects the read answers now. */
  read: () => Promise<WatchedObject[]>;
};

type Watcher = { spec: WatchSpec; notify: () => void; close: () => void };

export class WatchHub {
  /** Interval of the keep-alive comment; at most 15 s so that proxies keep the stream open. */
  keepAliveMs = 10_000;
  /** How often state watches read again for what changes with time alone (set before the first watch). */
  stateRereadMs = 2_000;
  private readonly watchers = new Set<Watcher>();
  private unsubscribe: Array<() => void> = [];

  constructor(
    private readonly store: Store,
    private readonly runtime: AppDeps['runtime'],
  ) {}

  get size(): number {
    return this.watchers.size;
  }

  add(w: Watcher): () => void {
    this.watchers.add(w);
    if (this.unsubscribe.length === 0) {
      this.unsubscribe.push(
        this.store.onChange((keys) => {
          for (const x of this.watchers) if (x.spec.relevant(keys)) x.notify();
        }),
      );
      const onState = this.runtime?.onStateChange;
      if (onState)
        this.unsubscribe.push(
          onState(() => {
            for (const x of this.watchers) if (x.spec.runtimeState) x.notify();
          }),
        );
      // State also changes with time alone, with no notification: a site's `connection` and
      // `last-seen` are derived from its stream's presence when read. State watches read again
      // every few seconds, sending only what differs.
      const timer = setInterval(() => {
        for (const x of this.watchers) if (x.spec.runtimeState) x.notify();
      }, this.stateRereadMs);
      timer.unref();
      this.unsubscribe.push(() => clearInterval(timer));
    }
    return () => {
      this.watchers.delete(w);
      if (this.watchers.size === 0) this.stopListening();
    };
  }

  /** Ends every stream (the process is stopping). */
  close(): void {
    for (const w of [...this.watchers]) w.close();
    this.stopListening();
  }

  private stopListening(): void {
    for (const u of this.unsubscribe.splice(0)) u();
  }
}

const hubs = new WeakMap<Store, WatchHub>();

/** The one hub of this store (created on first use). */
export function watchHub(deps: Pick<AppDeps, 'store' | 'runtime'>): WatchHub {
  let hub = hubs.get(deps.store);
  if (!hub) {
    hub = new WatchHub(deps.store, deps.runtime);
    hubs.set(deps.store, hub);
  }
  return hub;
}

/** Ends the watch streams served from this store, if any. */
export function closeWatches(store: Store): void {
  hubs.get(store)?.close();
}

function withPath(o: WatchedObject): JsonObject {
  return isObject(o.value) ? { 'x-path': o.xPath, ...o.value } : { 'x-path': o.xPath, value: o.value };
}

/**
 * Why the stream must end now, or undefined: its token no longer authenticates (the user was
 * deleted, its password or tenant changed, the token was revoked) or its permissions changed
 * (policies, tenants). Reads and keep-alives check it first, so no change reaches a caller
 * who could no longer read it; the client opens the watch again, authorized afresh.
 */
function revocationCheck(c: Ctx, auth: AppDeps['auth'] | undefined): () => Promise<ApiError | undefined> {
  const opened = c.get('principal');
  const header = c.req.header('authorization');
  if (!opened || !auth) return () => Promise.resolve(undefined);
  const was = permissionsOf(opened);
  return async () => {
    try {
      const now = await auth.authenticate(header);
      if (permissionsOf(now) === was) return undefined;
      return new ApiError('unauthorized', "The token's permissions changed: reopen the watch", {
        code: 'invalid-token',
      });
    } catch (err) {
      // Refused (401, 403) ends it as expired; the store unavailable (503) does not: the read
      // that follows meets the outage too and ends the stream as an outage does.
      if (err instanceof ApiError && (err.status === 401 || err.status === 403)) return err;
      if (err instanceof ApiError) return undefined;
      throw err;
    }
  };
}

/** The SSE response of a watch; the caller has already checked the query and authorization. */
export function watchResponse(c: Ctx, deps: Pick<AppDeps, 'store' | 'runtime' | 'auth'>, spec: WatchSpec): Response {
  const hub = watchHub(deps);
  const revoked = revocationCheck(c, deps.auth);
  return streamSSE(c, async (stream: SSEStreamingApi) => {
    const sent = new Map<string, string>();
    let dirty = true;
    let running = false;
    let closed = false;
    let finish: () => void = () => {};
    const done = new Promise<void>((resolve) => (finish = resolve));
    const end = () => {
      if (closed) return;
      closed = true;
      finish();
    };

    const emit = async (objects: WatchedObject[]): Promise<void> => {
      const now = new Map<string, string>();
      for (const o of objects) {
        const text = canonicalJson(withPath(o));
        now.set(o.xPath, text);
        if (sent.get(o.xPath) !== text) await stream.writeSSE({ event: 'change', data: text });
      }
      for (const xPath of sent.keys()) {
        if (!now.has(xPath))
          await stream.writeSSE({
            event: 'change',
            data: JSON.stringify({ 'x-path': xPath, 'x-operation': 'delete' }),
          });
      }
      sent.clear();
      for (const [k, v] of now) sent.set(k, v);
    };

    /** Ends the stream with `event: expired` and the reason (a 401's error entry). */
    const expire = (err: ApiError): Promise<void> =>
      stream.writeSSE({ event: 'expired', data: JSON.stringify(err.toEntry()) }).then(end, end);

    const pump = async (): Promise<void> => {
      if (running) return;
      running = true;
      try {
        while (dirty && !closed) {
          dirty = false;
          const why = await revoked();
          if (why) return void (await expire(why));
          await emit(await spec.read());
        }
      } catch (err) {
        // The store is unreachable or the stream is gone: end it; the client reconnects.
        log('debug', 'watch: ending a stream', { error: errorText(err) });
        end();
      } finally {
        running = false;
      }
    };

    const remove = hub.add({
      spec,
      notify: () => {
        dirty = true;
        void pump();
      },
      close: end,
    });
    stream.onAbort(end);
    // The stream lasts as long as the token that opened it.
    const expires = c.get('principal')?.expires;
    const expiry =
      expires === undefined
        ? undefined
        : setTimeout(
            () =>
              void expire(
                new ApiError('unauthorized', 'The token expired: log in again and reopen the watch', {
                  code: 'invalid-token',
                }),
              ),
            Math.min(Math.max(0, expires - Date.now()), 2 ** 31 - 1),
          );
    // A revoked token ends the stream within a keep-alive even when nothing changes.
    const keepAlive = setInterval(() => {
      void revoked().then((why) => (why ? expire(why) : stream.write(': keep-alive\n\n').catch(end)), end);
    }, hub.keepAliveMs);
    try {
      await pump();
      if (!closed) await stream.writeSSE({ event: 'synced', data: JSON.stringify({ count: sent.size }) });
      if (dirty) void pump();
      await done;
    } finally {
      clearInterval(keepAlive);
      if (expiry) clearTimeout(expiry);
      remove();
    }
  });
}
