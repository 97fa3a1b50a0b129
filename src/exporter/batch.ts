/**
 * `batch: {max-messages, max-bytes, max-wait}` (CONTRACT §12): messages filtered and expanded
 * one by one (deliver.ts `prepare`) are gathered here into batches, one POST each. A batch is
 * sealed when it holds `max-messages`, when the next message would take its body past
 * `max-bytes` (a single larger message goes alone), or `max-wait` after its first message
 * (the exporter's clock, so tests control it). Messages go to the same batch only when they
 * share topic, URL and `ordering-key`: the POST goes to that URL with the first message's
 * headers. The body: with `data-format: json` a JSON array of the expanded datas, with
 * `string` the datas joined by newlines. Sealed batches wait in `ready` for the exporter to
 * give each an in-flight slot. Open batches hold no slot; their messages are read but not
 * acknowledged, so a stop or a crash leaves them pending and they are read again.
 */
import type { Clock } from '../lib/clock.js';
import type { BatchSpec } from '../resources/webhook/extensions.js';
import type { Message } from './message.js';
import type { Post, Prepared } from './deliver.js';
import { batchId } from './signing.js';
import type { TopicReader } from './topic-reader.js';

/** Why a batch's max-wait timer is cancelled: given, so that abort() makes no DOMException (a stack trace per batch). */
const sealed = 'sealed';

export type BatchItem = { reader: TopicReader; msg: Message; prepared: Prepared };

export class Batch {
  readonly items: BatchItem[] = [];
  bytes = 0;
  /** Cancels the max-wait timer once the batch is sealed otherwise. */
  readonly timer = new AbortController();

  constructor(
    readonly group: string,
    /** The ordering key of its messages (all equal), or undefined without ordering-key. */
    readonly key: string | undefined,
  ) {}

  /** The POST carrying every message of the batch. */
  post(format: 'string' | 'json', signing: boolean): Post {
    const first = this.items[0]!;
    const datas = this.items.map((i) => i.prepared.data);
    const last = this.items[this.items.length - 1]!;
    return {
      target: first.prepared.target,
      headers: first.prepared.headers,
      body: format === 'json' ? `[${datas.join(',')}]` : datas.join('\n'),
      id: signing ? batchId(first.msg.topic, first.msg.entry.id, last.msg.entry.id) : '',
      messages: this.items.map((i) => i.msg),
    };
  }
}

export class Batcher {
  private readonly open = new Map<string, Batch>();
  /** Messages in open batches, all groups together. */
  private openItems = 0;
  /** Sealed batches waiting for a slot, oldest first. */
  readonly ready: Batch[] = [];

  constructor(
    private readonly spec: BatchSpec,
    private readonly clock: Clock,
    /** Told when a batch is sealed by its max-wait (the exporter gives it a slot). */
    private readonly onDue: () => void,
  ) {}

  get pending(): number {
    return this.openItems;
  }

  /** Adds a prepared message to its group's open batch; a batch sealed by it goes to `ready`. */
  add(group: string, key: string | undefined, item: BatchItem): void {
    const bytes = Buffer.byteLength(item.prepared.data);
    let b = this.open.get(group);
    // The separator (comma or newline) and, for the first message, the brackets of json.
    if (b && b.bytes + 1 + bytes > this.spec.maxBytes) {
      this.seal(b);
      b = undefined;
    }
    if (!b) {
      b = new Batch(group, key);
      b.bytes = 1;
      this.open.set(group, b);
      this.startTimer(b);
    }
    b.items.push(item);
    b.bytes += 1 + bytes;
    this.openItems++;
    if (b.items.length >= this.spec.maxMessages) this.seal(b);
  }

  private startTimer(b: Batch): void {
    void this.clock.sleep(this.spec.maxWaitMs, b.timer.signal).then(() => {
      if (b.timer.signal.aborted || this.open.get(b.group) !== b) return;
      this.seal(b);
      this.onDue();
    });
  }

  private seal(b: Batch): void {
    b.timer.abort(sealed);
    this.open.delete(b.group);
    this.openItems -= b.items.length;
    this.ready.push(b);
  }

  /** Seals every open batch (too many messages waiting in open batches). */
  sealAll(): void {
    for (const b of [...this.open.values()]) this.seal(b);
  }

  /** At a stop: nothing more is sent; the messages stay pending and are read again. */
  clear(): void {
    for (const b of this.open.values()) b.timer.abort(sealed);
    this.open.clear();
    this.openItems = 0;
    this.ready.length = 0;
  }
}
