/**
 * Write-time checks of the delivery controls that a JSON Schema cannot express, so a bad
 * value is a 400 when written: `retry-on` items, and a dead-letter topic the exporter
 * itself reads (a failing message would come back forever).
 */
import { ApiError } from '../lib/errors.js';
import type { JsonObject } from '../lib/json.js';
import { compileRetryOn } from './retry-on.js';

export function controlProblems(cfg: JsonObject, xPath: string): ApiError[] {
  const out: ApiError[] = [];
  try {
    compileRetryOn(cfg['retry-on']);
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    out.push(err.rewrap(`${err.message} (${xPath})`, { 'x-path': xPath }));
  }
  const dlt = cfg['dead-letter-topic'];
  const topics = [...(Array.isArray(cfg.topics) ? cfg.topics : []), cfg.topic];
  if (typeof dlt === 'string' && topics.includes(dlt))
    out.push(
      new ApiError(
        'invalid-value',
        `Cannot use ${dlt} as dead-letter-topic: the exporter reads that topic, so a failing message would come back forever (${xPath})`,
        { code: 'invalid-config', path: 'dead-letter-topic', 'x-path': xPath },
      ),
    );
  return out;
}
