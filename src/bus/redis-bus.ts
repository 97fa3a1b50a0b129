/**
 * The bus on Redis streams. Two connections in all, whatever the number of
 * exporters: `cmd` for every non-blocking command (node-redis pipelines concurrent
 * commands on it) and the notifier's blocking XREAD. Commands issued while Redis is down
 * wait in node-redis's offline queue and run after the reconnect.
 */
import { createClient, type RedisClientType } from 'redis';
import { log } from '../log.js';
import {
  BusError,
  entryObject,
  produceFields,
  streamPrefix,
  type Bus,
  type GroupRead,
  type ProduceInput,
  type StartAt,
  type StreamEntry,
  type TopicInfo,
} from './bus.js';
import { Discovery } from './discovery.js';
import { Notifier } from './notifier.js';
import { asString, groupLag, parseAutoclaim, parseEntries, parseScan, parseStreams } from './redis-replies.js';

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** NOGROUP: the group (or the stream) vanished, e.g. Redis restarted without persistence. */
function translate(err: unknown): Error {
  const text = errorText(err);
  if (text.startsWith('NOGROUP')) return new BusError('no-group', text);
  return err instanceof Error ? err : new BusError('unavailable', text);
}

export async function openRedisBus(url: string): Promise<Bus & { connectionNames(): string[] }> {
  const options = {
    url,
    socket: { reconnectStrategy: (retries: number) => Math.min(100 * 2 ** Math.min(retries, 5), 2000) },
  };
  const cmd: RedisClientType = createClient(options);
  const blocking: RedisClientType = createClient(options);
  for (const [name, c] of [
    ['command', cmd],
    ['notifier', blocking],
  ] as const) {
    c.on('error', (err: unknown) =>
      log('debug', 'bus: redis connection error', { connection: name, error: errorText(err) }),
    );
    c.on('ready', () => {
      void c.sendCommand(['CLIENT', 'SETNAME', `edgeplane-bus-${name}`]).catch(() => undefined);
    });
  }
  await Promise.all([cmd.connect(), blocking.connect()]);

  const notifier = new Notifier(blocking, cmd);

  const listTopics = async (): Promise<string[]> => {
    const found = new Set<string>();
    let cursor = '0';
    do {
      const page = parseScan(
        await cmd.sendCommand(['SCAN', cursor, 'MATCH', `${streamPrefix}*`, 'COUNT', '1000', 'TYPE', 'stream']),
      );
      for (const k of page.keys) found.add(k.slice(streamPrefix.length));
      cursor = page.cursor;
    } while (cursor !== '0');
    return [...found].sort();
  };
  const discovery = new Discovery(listTopics);

  const bus: Bus & { connectionNames(): string[] } = {
    kind: 'redis',
    connectionNames: () => ['edgeplane-bus-command', 'edgeplane-bus-notifier'],

    async produce(topic: string, msg: ProduceInput): Promise<string> {
      return asString(await cmd.sendCommand(['XADD', streamPrefix + topic, '*', ...produceFields(msg)]));
    },

    listTopics,

    async topicInfo(topic: string): Promise<TopicInfo | undefined> {
      const key = streamPrefix + topic;
      const [type, len, last] = await Promise.all([
        cmd.sendCommand(['TYPE', key]),
        cmd.sendCommand(['XLEN', key]).catch(() => 0),
        cmd.sendCommand(['XREVRANGE', key, '+', '-', 'COUNT', '1']).catch(() => null),
      ]);
      if (asString(type) !== 'stream') return undefined;
      const entry = parseEntries(last)[0];
      return {
        name: topic,
        length: typeof len === 'number' ? len : 0,
        'last-entry-id': entry?.id ?? null,
        'last-entry': entry ? entryObject(entry) : null,
      };
    },

    async ensureGroup(topic: string, group: string, start: StartAt): Promise<void> {
      const id = start.at === 'end' ? '$' : start.at === 'beginning' ? '0' : start.id;
      try {
        await cmd.sendCommand(['XGROUP', 'CREATE', streamPrefix + topic, group, id, 'MKSTREAM']);
      } catch (err) {
        if (!errorText(err).startsWith('BUSYGROUP')) throw translate(err);
      }
    },

    async read(
      topic: string,
      group: string,
      consumer: string,
      opts: { cursor: string; count: number },
    ): Promise<GroupRead> {
      const key = streamPrefix + topic;
      try {
        const raw = await cmd.sendCommand([
          'XREADGROUP',
          'GROUP',
          group,
          consumer,
          'COUNT',
          String(opts.count),
          'STREAMS',
          key,
          opts.cursor,
        ]);
        const entries = parseStreams(raw).get(key) ?? [];
        // An empty read of new entries means nothing is left: lag 0 without asking, which
        // keeps the idle polls of many exporters to one command each.
        if (entries.length === 0) return { entries, lag: opts.cursor === '>' ? 0 : undefined };
        const info = await cmd.sendCommand(['XINFO', 'GROUPS', key]).catch(() => null);
        return { entries, lag: groupLag(info, group) };
      } catch (err) {
        throw translate(err);
      }
    },

    async claimStale(
      topic: string,
      group: string,
      consumer: string,
      minIdleMs: number,
      count: number,
    ): Promise<StreamEntry[]> {
      try {
        const r = parseAutoclaim(
          await cmd.sendCommand([
            'XAUTOCLAIM',
            streamPrefix + topic,
            group,
            consumer,
            String(minIdleMs),
            '0-0',
            'COUNT',
            String(count),
          ]),
        );
        return r.entries;
      } catch (err) {
        throw translate(err);
      }
    },

    async ack(topic: string, group: string, ids: readonly string[]): Promise<void> {
      if (ids.length === 0) return;
      await cmd.sendCommand(['XACK', streamPrefix + topic, group, ...ids]);
    },

    async destroyGroup(topic: string, group: string): Promise<void> {
      await cmd.sendCommand(['XGROUP', 'DESTROY', streamPrefix + topic, group]).catch((err: unknown) => {
        log('debug', 'bus: group destroy failed', { topic, group, error: errorText(err) });
      });
    },

    watch: (topic, wake) => notifier.watch(streamPrefix + topic, wake),
    onTopics: (listener) => discovery.onTopics(listener),

    async close(): Promise<void> {
      discovery.close();
      const stopping = notifier.close();
      blocking.destroy();
      await stopping;
      await cmd.close().catch(() => cmd.destroy());
    },
  };
  return bus;
}
