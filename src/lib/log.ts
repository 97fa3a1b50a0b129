/** One JSON object a line on stdout. Never pass secrets in `fields`. */
const levels = { debug: 10, info: 20, warn: 30, error: 40 } as const;
export type LogLevel = keyof typeof levels;

let threshold: number = levels.info;

export function setLogLevel(level: LogLevel): void {
  threshold = levels[level];
}

export function log(level: LogLevel, msg: string, fields?: Record<string, unknown>): void {
  if (levels[level] < threshold) return;
  const line = JSON.stringify({ time: new Date().toISOString(), level, msg, ...fields });
  process.stdout.write(line + '\n');
}
