/**
 * One connection that waits for new entries on every watched stream at once
 * (`XREAD BLOCK` over all of them with the last seen IDs) and wakes only the watchers of
 * streams that got entries. This is what keeps 1,000 exporters at a handful of Redis
 * connections: exporters never block on their own connection, they read with
 * non-blocking XREADGROUP on the shared command connection when woken.
 *
 * A new watch learns the stream's last ID and wakes its watcher once, so entries that
 * arrive between the exporter's first read and the next XREAD are not missed; a wait that
 * does not cover a new stream is interrupted with CLIENT UNBLOCK. The block time is short
 * (1 s) so a rare lost interrupt costs at most that. Exporters also poll slowly on their own
 * as a safety net.
 *
 * On Redis Cluster one XREAD can only name streams of one slot: the bus keeps one Notifier per
 * slot that has watched streams (`bus/slot-notifiers.ts`), each on its own connection to that
 * slot's primary; `routeKey` (a stream of the slot) sends its CLIENT ID and CLIENT UNBLOCK
 * there (a Cluster client, connected before its Notifier is made, has no `isReady` of its own).
 */
import { log } from '../lib/log.js';
import { onNewConnection, send, type RedisClient } from '../lib/redis.js';
import { isCluster } from '../lib/redis-cluster.js';
import { parseEntries, parseStreams } from './redis-replies.js';
import { errorText } from '../lib/error-text.js';

type Watched = { key: string; lastId: string; wakers: Set<() => void> };

const blockMs = 1000;

export class Notifier {
  private readonly watched = new Map<string, Watched>();
  private closed = false;
  private loop: Promise<void> | undefined;
  private idle: (() => void) | undefined;
  private blockedOn: Set<string> | undefined;
  /** The notifier connection's CLIENT ID (changes at reconnect), to interrupt its wait. */
  private clientId: string | undefined;

  constructor(
    private readonly conn: RedisClient,
    private readonly command: Parameters<typeof send>[0],
    private readonly routeKey?: string,
  ) {
    const learnId = () => {
      void send(conn, ['CLIENT', 'ID'], routeKey).then(
        (id) => {
          this.clientId = String(id);
        },
        () => undefined,
      );
    };
    onNewConnection(conn, () => {
      learnId();
      // After a reconnect (Redis restarted, maybe without its data) the last IDs are
      // re-read and every watcher is woken once, so no entry waits for a safety poll.
      for (const w of this.watched.values()) {
        w.lastId = '$';
        void this.learnLastId(w);
      }
    });
    if (conn.isReady || isCluster(conn)) learnId();
  }

  watch(key: string, wake: () => void): () => void {
    let w = this.watched.get(key);
    if (!w) {
      w = { key, lastId: '$', wakers: new Set() };
      this.watched.set(key, w);
      void this.learnLastId(w);
    } else if (w.lastId !== '$') {
      // A second watcher of a known stream gets the same first wake as the first one did.
      queueMicrotask(wake);
    }
    w.wakers.add(wake);
    this.start();
    this.idle?.();
    return () => {
      const cur = this.watched.get(key);
      if (!cur) return;
      cur.wakers.delete(wake);
      if (cur.wakers.size === 0) this.watched.delete(key);
    };
  }

  private async learnLastId(w: Watched): Promise<void> {
    try {
      const raw = await send(this.command, ['XREVRANGE', w.key, '+', '-', 'COUNT', '1']);
      const last = parseEntries(raw)[0];
      if (w.lastId === '$') w.lastId = last ? last.id : '0-0';
    } catch (err) {
      log('debug', 'bus: cannot read last id', { key: w.key, error: errorText(err) });
      if (w.lastId === '$') w.lastId = '0-0';
    }
    for (const wake of w.wakers) wake();
    // Interrupt a wait that does not include this stream yet, so it joins at once.
    if (this.blockedOn && !this.blockedOn.has(w.key) && this.clientId) {
      void send(this.command, ['CLIENT', 'UNBLOCK', this.clientId], this.routeKey).catch(() => undefined);
    }
  }

  private start(): void {
    if (this.loop || this.closed) return;
    this.loop = this.run();
  }

  private async run(): Promise<void> {
    while (!this.closed) {
      const ready = [...this.watched.values()].filter((w) => w.lastId !== '$');
      if (ready.length === 0) {
        await new Promise<void>((resolve) => {
          this.idle = resolve;
          setTimeout(resolve, 200).unref();
        });
        this.idle = undefined;
        continue;
      }
      let reply: unknown;
      this.blockedOn = new Set(ready.map((w) => w.key));
      try {
        reply = await send(this.conn, [
          'XREAD',
          'COUNT',
          '1',
          'BLOCK',
          String(blockMs),
          'STREAMS',
          ...ready.map((w) => w.key),
          ...ready.map((w) => w.lastId),
        ]);
      } catch (err) {
        if (this.closed) break;
        log('debug', 'bus: notifier read failed, retrying', { error: errorText(err) });
        await new Promise((r) => setTimeout(r, 500).unref());
        continue;
      } finally {
        this.blockedOn = undefined;
      }
      const got = parseStreams(reply);
      if (got.size === 0) continue;
      // Jump to each stream's newest entry before waking, so the woken exporters' reads
      // happen after that point and together cover everything up to it.
      const woken = [...got.keys()].map((k) => this.watched.get(k)).filter((w): w is Watched => w !== undefined);
      try {
        const latest = await Promise.all(
          woken.map((w) => send(this.conn, ['XREVRANGE', w.key, '+', '-', 'COUNT', '1'])),
        );
        woken.forEach((w, i) => {
          const e = parseEntries(latest[i])[0];
          if (e) w.lastId = e.id;
        });
      } catch (err) {
        log('debug', 'bus: notifier could not read latest ids', { error: errorText(err) });
      }
      for (const w of woken) for (const wake of w.wakers) wake();
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.idle?.();
    await this.loop?.catch(() => undefined);
  }
}
