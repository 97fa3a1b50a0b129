/**
 * `ordering-key` (CONTRACT §12): messages with equal keys are delivered one at a time, in
 * topic order; different keys go in parallel up to `max-in-flight`. A message whose key is
 * busy waits here without holding an in-flight slot, so one hot key never takes the slots of
 * the others; when the running message of a key is handled, the next of that key takes over
 * its slot. The exporter bounds how many messages wait (`waiting`).
 */
export class KeyQueues<T> {
  /** Per busy key, the messages waiting behind the running one (in topic order). */
  private readonly queues = new Map<string, T[]>();
  waiting = 0;

  /** True when `item` may start now; else it waits behind the running message of its key. */
  admit(key: string, item: T): boolean {
    const q = this.queues.get(key);
    if (q) {
      q.push(item);
      this.waiting++;
      return false;
    }
    this.queues.set(key, []);
    return true;
  }

  /** The running message of `key` is handled: the next of that key to start, if any. */
  next(key: string): T | undefined {
    const q = this.queues.get(key);
    const item = q?.shift();
    if (item === undefined) this.queues.delete(key);
    else this.waiting--;
    return item;
  }

  /** At a stop: waiting messages are not started (they stay pending and are read again). */
  clear(): void {
    this.queues.clear();
    this.waiting = 0;
  }
}
