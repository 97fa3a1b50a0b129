/**
 * `batch: {max-messages, max-bytes, max-wait}` (CONTRACT §12): messages filtered and expanded
 * one by one (deliver.ts `prepare`) are gathered here into batches, one POST each. A batch is
 * sealed when it holds `max-messages`, when the next message would take its body past
 * `max-bytes` (a single larger message goes alone), or `max-wait` after its first message
 * (the exporter's clock, so tests control it; the wait starts in the check phase of the event
 * loop's turn that opened the batch, so a batch filled within one turn, as from one read of a
 * busy topic, never starts a timer: a timer started and cancelled per batch cost ~0.5 µs a
 * message of a batch of 100). Messages go to the same batch only when they
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

export type BatchItem = { reader: TopicReader; msg: Message };

export class Batch {
  readonly items: BatchItem[] = [];
  bytes = 0;
  /** Cancels the max-wait timer once the batch is sealed otherwise (none before the timer starts). */
  timer: AbortController | undefined;
  /** The expanded data of each item, in order, until the POST is made: then its body holds them. */
  private datas: string[] = [];
  /** The first message's target and headers: the POST's. */
  private first: Prepared | undefined;

  constructor(
    readonly group: string,
    /** The ordering key of its messages (all equal), or undefined without ordering-key. */
    readonly key: string | undefined,
  ) {}

  push(item: BatchItem, prepared: Prepared): void {
    this.items.push(item);
    this.datas.push(prepared.data);
    this.first ??= prepared;
  }

  /**
   * The POST carrying every message of the batch, made once. The expanded datas are let go
   * then: a batch under way holds its body and its messages' entries only (64 batches of 100 in
   * flight are thousands of objects every young-generation collection copies).
   */
  post(format: 'string' | 'json', signing: boolean): Post {
    const first = this.items[0]!;
    const last = this.items[this.items.length - 1]!;
    const body = format === 'json' ? `[${this.datas.join(',')}]` : this.datas.join('\n');
    this.datas = [];
    return {
      target: this.first!.target,
      headers: this.first!.headers,
      body,
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
  /** Batches opened in this turn of the event loop: their max-wait timers start in its check phase. */
  private unarmed: Batch[] = [];
  private arming: NodeJS.Immediate | undefined;

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
  add(group: string, key: string | undefined, item: BatchItem, prepared: Prepared): void {
    const bytes = Buffer.byteLength(prepared.data);
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
      this.unarmed.push(b);
      this.arming ??= setImmediate(this.arm);
    }
    b.push(item, prepared);
    b.bytes += 1 + bytes;
    this.openItems++;
    if (b.items.length >= this.spec.maxMessages) this.seal(b);
  }

  /** Starts the max-wait timers of the batches opened in this turn and still open. */
  private readonly arm = (): void => {
    this.arming = undefined;
    const opened = this.unarmed;
    this.unarmed = [];
    for (const b of opened) if (this.open.get(b.group) === b) this.startTimer(b);
  };

  private startTimer(b: Batch): void {
    const timer = (b.timer = new AbortController());
    void this.clock.sleep(this.spec.maxWaitMs, timer.signal).then(() => {
      if (timer.signal.aborted || this.open.get(b.group) !== b) return;
      this.seal(b);
      this.onDue();
    });
  }

  private seal(b: Batch): void {
    b.timer?.abort(sealed);
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
    for (const b of this.open.values()) b.timer?.abort(sealed);
    clearImmediate(this.arming);
    this.arming = undefined;
    this.unarmed = [];
    this.open.clear();
    this.openItems = 0;
    this.ready.length = 0;
  }
}
