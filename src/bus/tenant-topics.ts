/**
 * Topics belong to a tenant. The root tenant's topic `T` is the stream `volga:T`; subtenant
 * `S`'s topic `T` is `volga:S/T` (a topic name cannot contain `/`, a tenant name neither, so
 * the two never collide). `system:` topics (the audit trail) are the root tenant's.
 *
 * `busTopic` / `topicOfBus` are the one place that maps (tenant, topic) to the name on the
 * bus (the stream key is `volga:` + that name) and back. `tenantBus` is a tenant's view of
 * the bus built on them: every caller that acts for a tenant (its exporters, the topics API,
 * produce, the audit trail for the root) goes through one, so it reaches only its own topics.
 */
import { ApiError } from '../lib/errors.js';
import { reservedTopicPrefix } from './topics.js';
import { streamPrefix, type Bus, type TopicInfo } from './bus.js';

/** The name of a tenant's topic on the bus (its stream is `volga:` + this). */
export function busTopic(tenant: string, topic: string, rootTenant: string): string {
  if (tenant === rootTenant || topic.startsWith(reservedTopicPrefix)) return topic;
  return `${tenant}/${topic}`;
}

/** The stream key of a tenant's topic: `volga:T` or `volga:S/T`. */
export function streamKey(tenant: string, topic: string, rootTenant: string): string {
  return streamPrefix + busTopic(tenant, topic, rootTenant);
}

/** The tenant and topic of a name on the bus (`T` → root's T, `S/T` → S's T). */
export function topicOfBus(name: string, rootTenant: string): { tenant: string; topic: string } {
  const slash = name.indexOf('/');
  if (slash < 0) return { tenant: rootTenant, topic: name };
  return { tenant: name.slice(0, slash), topic: name.slice(slash + 1) };
}

/** Methods handled below; every other Bus method takes a topic as its first argument. */
const special = new Set(['listTopics', 'topicInfo', 'onTopics', 'produce', 'close', 'kind']);

/**
 * A tenant's view of the bus: topic names in and out are the tenant's own, and topics of
 * other tenants do not exist in it. A subtenant cannot produce to a `system:` topic (403) and
 * does not see them. Closing the view does not close the bus.
 */
export function tenantBus(bus: Bus, tenant: string, rootTenant: string): Bus {
  const isRoot = tenant === rootTenant;
  const own = (name: string): string | undefined => {
    const o = topicOfBus(name, rootTenant);
    if (o.tenant !== tenant) return undefined;
    return o.topic;
  };
  const ownList = (names: Iterable<string>): string[] =>
    [...names].flatMap((n) => {
      const t = own(n);
      return t === undefined ? [] : [t];
    });
  const hidden = (topic: string) => !isRoot && topic.startsWith(reservedTopicPrefix);
  const name = (topic: string) => busTopic(tenant, topic, rootTenant);

  const view: Partial<Bus> = {
    kind: bus.kind,
    async produce(topic, msg) {
      if (hidden(topic))
        throw new ApiError(
          'forbidden',
          `Cannot produce to ${topic}: ${reservedTopicPrefix} topics belong to the root tenant`,
          { code: 'reserved-topic', path: topic },
        );
      return bus.produce(name(topic), msg);
    },
    async listTopics() {
      return ownList(await bus.listTopics());
    },
    async topicInfo(topic): Promise<TopicInfo | undefined> {
      if (hidden(topic)) return undefined;
      const info = await bus.topicInfo(name(topic));
      return info && { ...info, name: topic };
    },
    onTopics(listener) {
      return bus.onTopics((all) => listener(new Set(ownList(all))));
    },
    async close() {
      /* the shared bus is closed by its owner */
    },
  };
  // One wrapper per method, made at its first use (the exporters call read and ack per message).
  const wrapped = new Map<string | symbol, { of: unknown; fn: (...a: unknown[]) => unknown }>();
  return new Proxy(bus, {
    get(target, prop, receiver) {
      if (typeof prop === 'string' && special.has(prop)) return view[prop as keyof Bus];
      const v = Reflect.get(target, prop, receiver) as unknown;
      if (typeof v !== 'function') return v;
      const known = wrapped.get(prop);
      if (known?.of === v) return known.fn;
      const fn = (first: unknown, ...rest: unknown[]) =>
        (v as (...a: unknown[]) => unknown).call(target, typeof first === 'string' ? name(first) : first, ...rest);
      wrapped.set(prop, { of: v, fn });
      return fn;
    },
  });
}
