/** One JSON object a line on stdout. Never pass secrets in `fields`. */
const levels = { debug: 10, info: 20, warn: 30, error: 40 } as const;
export type LogLevel = keyof typeof levels;

let threshold: number = levels.info;

// A log sink that goes away (a closed pipe: `| head`, a log shipper restarting) loses the lines
// written meanwhile, not the process: without a listener the stream's EPIPE was an uncaught
// 'error' that ended it with a stack trace.
process.stdout.on('error', () => undefined);

export function setLogLevel(level: LogLevel): void {
  threshold = levels[level];
}

export function log(level: LogLevel, msg: string, fields?: Record<string, unknown>): void {
  if (levels[level] < threshold) return;
  const line = JSON.stringify({ time: new Date().toISOString(), level, msg, ...fields });
  process.stdout.write(line + '\n');
}

/** A log line of a repeating condition (`repeatingLog`); `ended()` when the condition is over. */
export type RepeatingLog = ((level: LogLevel, msg: string, fields?: Record<string, unknown>) => void) & {
  /** The condition is over (the connection is back, a pass succeeded): its next occurrence is logged at once. */
  ended(): void;
};

/**
 * A log line that repeats while a condition lasts (a connection error at each reconnect
 * attempt, a pass failing at each retry): logged the first time, then at most once every
 * `everyMs`, with `not-logged` counting the calls dropped since the last line. An outage of
 * twenty minutes is then about forty lines a source, not thousands. After `ended()`, a new
 * occurrence is a new condition: logged at once, however soon after the last line.
 */
export function repeatingLog(everyMs = 30_000, now: () => number = Date.now): RepeatingLog {
  let loggedAt = -Infinity;
  let dropped = 0;
  const say = (level: LogLevel, msg: string, fields?: Record<string, unknown>): void => {
    const t = now();
    if (t - loggedAt < everyMs) {
      dropped++;
      return;
    }
    log(level, msg, dropped > 0 ? { ...fields, 'not-logged': dropped } : fields);
    loggedAt = t;
    dropped = 0;
  };
  return Object.assign(say, {
    ended(): void {
      loggedAt = -Infinity;
      dropped = 0;
    },
  });
}
