/**
 * The reverse channel of `site=` reads (as KubeEdge and Avassa do it): a read for an edge site
 * travels DOWN the site's sync stream as a `request` event and its answer comes back UP by
 * POST, possibly to another control-plane process than the one that asked. So both directions
 * go through Redis pub/sub, never through one process's memory: whichever process holds the
 * site's stream and whichever receives the answer, the one that asked gets it.
 *
 *   ep:fleet:read     pub/sub: {site, id, tenant, path, query, rules}, to the stream(s) of `site`
 *   ep:fleet:answer   pub/sub: {site, id, status, body}, to the process that asked
 * (with `:N` appended on database N, like the change log's channel; on Redis Cluster the sharded
 * channels `{ep:fleet}:read` and `{ep:fleet}:answer`, SPUBLISH/SSUBSCRIBE, subscribed again on
 * the new primary after a failover). Nothing is stored: an
 * answer exists only on its way to the asker. On the embedded store (one control-plane
 * process) the same interface works in process.
 */
import { randomUUID } from 'node:crypto';
import { isObject, type Json } from '../../lib/json.js';
import { log } from '../../lib/log.js';
import {
  channelOf,
  closeClients,
  onNewConnection,
  redisClient,
  resubscribe,
  toTarget,
  type RedisTarget,
} from '../../lib/redis.js';

import { forwardedRules, type ForwardedAnswer, type ForwardedRead } from '../../api/deps.js';
import { errorText } from '../../lib/error-text.js';

export type { ForwardedAnswer, ForwardedRead };

export interface FleetRelay {
  /** Sends `read` to the streams of `site`; its answer, or undefined after `timeoutMs`. */
  ask(site: string, read: Omit<ForwardedRead, 'id'>, timeoutMs: number): Promise<ForwardedAnswer | undefined>;
  /** A sync stream of `site` held by this process receives the reads sent to that site. */
  onRead(site: string, listener: (read: ForwardedRead) => void): () => void;
  /** Hands the answer of `site` to read `id` to the process that asked (ignored when none waits). */
  answer(site: string, id: string, answer: ForwardedAnswer): Promise<void>;
  close(): Promise<void>;
}

type Pending = { site: string; resolve: (a: ForwardedAnswer | undefined) => void; timer: NodeJS.Timeout };

/** The per-process part shared by both implementations: who listens, who waits. */
function createRouting() {
  // An array a site, not a Set: one per connected site, usually of one listener.
  const readers = new Map<string, Array<(read: ForwardedRead) => void>>();
  const pending = new Map<string, Pending>();
  return {
    readers,
    pending,
    deliverRead(site: string, read: ForwardedRead) {
      for (const fn of [...(readers.get(site) ?? [])]) fn(read);
    },
    /** `undefined`: no answer will come (the read could not be sent). */
    deliverAnswer(site: string, id: string, answer: ForwardedAnswer | undefined) {
      const p = pending.get(id);
      // An answer from another site than the one asked is dropped (a site answers only its own reads).
      if (!p || p.site !== site) return;
      pending.delete(id);
      clearTimeout(p.timer);
      p.resolve(answer);
    },
    wait(site: string, id: string, timeoutMs: number): Promise<ForwardedAnswer | undefined> {
      return new Promise((resolve) => {
        const timer = setTimeout(() => {
          pending.delete(id);
          resolve(undefined);
        }, timeoutMs);
        pending.set(id, { site, resolve, timer });
      });
    },
    onRead(site: string, listener: (read: ForwardedRead) => void) {
      let list = readers.get(site);
      if (!list) readers.set(site, (list = []));
      list.push(listener);
      return () => {
        const i = list.indexOf(listener);
        if (i >= 0) list.splice(i, 1);
        if (list.length === 0 && readers.get(site) === list) readers.delete(site);
      };
    },
    close() {
      for (const p of pending.values()) {
        clearTimeout(p.timer);
        p.resolve(undefined);
      }
      pending.clear();
      readers.clear();
    },
  };
}

export function createEmbeddedRelay(): FleetRelay {
  const r = createRouting();
  return {
    ask(site, read, timeoutMs) {
      const id = randomUUID();
      const answer = r.wait(site, id, timeoutMs);
      queueMicrotask(() => r.deliverRead(site, { id, ...read }));
      return answer;
    },
    onRead: r.onRead,
    async answer(site, id, answer) {
      r.deliverAnswer(site, id, answer);
    },
    async close() {
      r.close();
    },
  };
}

export async function openRedisRelay(target: RedisTarget | string): Promise<FleetRelay> {
  const onError = (err: unknown) =>
    log('warn', 'redis connection error', {
      role: 'fleet-relay',
      error: errorText(err),
    });
  const cluster = toTarget(target).kind === 'cluster';
  const readChannel = cluster ? '{ep:fleet}:read' : channelOf(target, 'ep:fleet:read');
  const answerChannel = cluster ? '{ep:fleet}:answer' : channelOf(target, 'ep:fleet:answer');
  const r = createRouting();
  const pub = redisClient(target, 'fleet-relay');
  const sub = redisClient(target, 'fleet-relay-sub');
  await pub.connect();
  await sub.connect();
  const publish = (channel: string, text: string) =>
    cluster ? pub.sPublish(channel, text) : pub.publish(channel, text);
  const subscribe = (channel: string, fn: (text: string) => void) =>
    cluster ? sub.sSubscribe(channel, fn) : sub.subscribe(channel, fn);
  const parse = (text: string): Record<string, unknown> | undefined => {
    try {
      const v = JSON.parse(text) as unknown;
      return isObject(v) ? v : undefined;
    } catch {
      return undefined;
    }
  };
  const onReadText = (text: string) => {
    const m = parse(text);
    if (!m || typeof m.site !== 'string' || typeof m.id !== 'string') return;
    if (typeof m.tenant !== 'string' || typeof m.path !== 'string' || typeof m.query !== 'string') return;
    r.deliverRead(m.site, { id: m.id, tenant: m.tenant, path: m.path, query: m.query, ...forwardedRules(m.rules) });
  };
  const onAnswerText = (text: string) => {
    const m = parse(text);
    if (!m || typeof m.site !== 'string' || typeof m.id !== 'string' || typeof m.status !== 'number') return;
    r.deliverAnswer(m.site, m.id, { status: m.status, body: (m.body ?? null) as Json });
  };
  await subscribe(readChannel, onReadText);
  await subscribe(answerChannel, onAnswerText);
  if (cluster)
    onNewConnection(sub, () => {
      void resubscribe(sub, readChannel, () => subscribe(readChannel, onReadText));
      void resubscribe(sub, answerChannel, () => subscribe(answerChannel, onAnswerText));
    });
  return {
    async ask(site, read, timeoutMs) {
      const id = randomUUID();
      const answer = r.wait(site, id, timeoutMs);
      try {
        await publish(readChannel, JSON.stringify({ site, id, ...read }));
      } catch (err) {
        onError(err);
        r.deliverAnswer(site, id, undefined);
      }
      return answer;
    },
    onRead: r.onRead,
    async answer(site, id, answer) {
      await publish(answerChannel, JSON.stringify({ site, id, status: answer.status, body: answer.body }));
    },
    async close() {
      r.close();
      await closeClients(sub, pub);
    },
  };
}
