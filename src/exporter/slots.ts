/**
 * The in-flight slots of one exporter: at most `limit()` POSTs at once (`max-in-flight`, or the
 * adaptive limit). A slot is taken synchronously right after `free()` resolved, so the check
 * and the take happen in one turn; each release wakes one waiter, which checks again (another
 * taker may have come first). After `stop` every wait resolves at once.
 */
const freeNow = Promise.resolve();

export class Slots {
  used = 0;
  private readonly waiters: Array<() => void> = [];
  private stopped = false;

  constructor(readonly limit: () => number) {}

  get full(): boolean {
    return this.used >= this.limit();
  }

  /**
   * Resolves when a slot is free (or at stop); does not take it. One promise, checked at each
   * release (not an async function waiting in a loop: a promise and a turn less a message when
   * every slot is taken).
   */
  free(): Promise<void> {
    if (this.used < this.limit() || this.stopped) return freeNow;
    return new Promise<void>((resolve) => this.whenFree(resolve));
  }

  private whenFree(resolve: () => void): void {
    this.waiters.push(() => {
      if (this.used < this.limit() || this.stopped) resolve();
      else this.whenFree(resolve);
    });
  }

  /** Resolves at the next release (or at stop). */
  released(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return new Promise<void>((resolve) => this.waiters.push(resolve));
  }

  take(): void {
    this.used++;
  }

  release(): void {
    this.used--;
    this.waiters.shift()?.();
  }

  /** Every waiter resolves now and later waits do not block. */
  stop(): void {
    this.stopped = true;
    for (const w of this.waiters.splice(0)) w();
  }
}
