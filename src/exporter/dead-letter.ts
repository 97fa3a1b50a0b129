/**
 * `dead-letter-topic`: a message that is dropped (tries exhausted, or a failure `retry-on` does
 * not list) or ignored (URL or expansion failed) is appended to this topic of the same bus
 * with the fields `payload` (the original message's payload, and its `producer-name`, `host`,
 * `origin` and `time` when it has them), `topic`, `seqno`, `reason`, `attempts` and
 * `last-status` (an HTTP status, `connection`, or empty when no POST was made).
 * The original message is acked only once the append succeeded: a failing append is retried
 * until it works or the exporter stops (then the message stays pending and comes again).
 */
import type { Bus, ProduceInput } from '../bus/bus.js';
import { log } from '../lib/log.js';
import type { Clock } from '../lib/clock.js';
import type { Message } from './message.js';
import type { ExporterState } from './state.js';
import { backoffDelay } from '../lib/backoff.js';
import { errorText } from '../lib/error-text.js';

export type DeadLetterInfo = { reason: string; attempts: number; lastStatus: number | 'connection' | undefined };

export class DeadLetter {
  constructor(
    private readonly bus: Bus,
    readonly topic: string,
    private readonly clock: Clock,
    /** Told while an append fails (the exporter shows `retrying` and why), and when it is over. */
    private readonly state?: Pick<ExporterState, 'heldBack' | 'retryEnded'>,
  ) {}

  /** False when the exporter stopped before the append succeeded (the message must not be acked). */
  async append(msg: Message, info: DeadLetterInfo, stopping: AbortSignal): Promise<boolean> {
    const original = msg.entry.fields;
    const fields: ProduceInput = { payload: original.payload ?? '' };
    // The original message's other fields too, so an entry can be produced again as it was.
    for (const name of ['producer-name', 'host', 'origin', 'time'] as const) {
      const v = original[name];
      if (v !== undefined) fields[name] = v;
    }
    Object.assign(fields, {
      topic: msg.topic,
      seqno: msg.entry.id,
      reason: info.reason,
      attempts: String(info.attempts),
      'last-status': info.lastStatus === undefined ? '' : String(info.lastStatus),
    });
    for (let i = 0; !stopping.aborted; i++) {
      try {
        await this.bus.produce(this.topic, fields);
        if (i > 0) this.state?.retryEnded(this.clock.now());
        return true;
      } catch (err) {
        log('warn', 'exporter: cannot append to the dead-letter topic, retrying', {
          topic: this.topic,
          error: errorText(err),
        });
        this.state?.heldBack(
          `message ${msg.entry.id} of topic ${msg.topic}: cannot append to the dead-letter topic ${this.topic}: ${errorText(err)}`,
          this.clock.now(),
          i === 0,
        );
        await this.clock.sleep(backoffDelay(i, { baseMs: 100, maxMs: 5000 }), stopping);
        // Stopped meanwhile: the message is not handled (it comes again), nor failing any more.
        if (stopping.aborted) this.state?.retryEnded(this.clock.now(), false);
      }
    }
    return false;
  }
}
