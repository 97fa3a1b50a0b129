/**
 * Several processes on one exporter (Redis): each reads as its own consumer. When one dies
 * (kill -9) or stops, the others take over what it left pending while they run, without
 * waiting for it to come back: two sites sharing an exporter, and two processes of one site.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openEnv, spawnExporterProc } from '../helpers/exporter-proc.js';
import { startWebhookServer } from '../helpers/webhook-server.js';
import type { JsonObject } from '../../src/lib/json.js';
import { freshRedisDb } from '../helpers/redis.js';

const total = 300;

async function setup(db: number, name: string, placement: JsonObject) {
  const env = await openEnv(await freshRedisDb(db));
  const hook = await startWebhookServer();
  // Slow enough (about 8 s in all) that the second process joins before the first is done.
  hook.script(() => ({ delayMs: 50 }));
  await env.webhook({
    name,
    topics: [`${name}-t`],
    'start-position': 'beginning',
    'site-placement': placement,
    url: `${hook.url}/${name}`,
    data: '${MSG_PAYLOAD}',
    'max-in-flight': 2,
  });
  for (let i = 0; i < total; i++) await env.produce(`${name}-t`, `m${i}`);
  return { env, hook };
}

const distinct = (bodies: string[]) => new Set(bodies).size;

test('two sites share an exporter; one is killed: the survivor delivers what it left pending', async () => {
  const { env, hook } = await setup(8, 'fo', { 'all-sites': true });
  // A starts first and reads every message (one batch); B joins, then A dies.
  const a = await spawnExporterProc(env.url, 'site-a');
  const b = await (async () => {
    await hook.waitFor((r) => r.length >= 20, 'some deliveries by A');
    return spawnExporterProc(env.url, 'site-b');
  })().finally(() => a.kill9());
  try {
    await hook.waitFor(
      () => distinct(hook.delivered().map((r) => r.body)) === total,
      'every message delivered by the survivor',
      60_000,
    );
    const bodies = hook.delivered().map((r) => r.body);
    assert.ok(bodies.length - total <= 2, `duplicates ≤ max-in-flight, got ${bodies.length - total}`);
  } finally {
    await b.kill9();
    await env.close();
    await hook.close();
  }
});

test('two processes of one site: a graceful stop of one leaves nothing behind and resends nothing', async () => {
  const { env, hook } = await setup(9, 'same', { 'all-sites': true });
  const a = await spawnExporterProc(env.url, 'one-site');
  const b = await (async () => {
    await hook.waitFor((r) => r.length >= 20, 'some deliveries by the first');
    return spawnExporterProc(env.url, 'one-site');
  })().finally(() => a.stop());
  try {
    await hook.waitFor(
      () => distinct(hook.delivered().map((r) => r.body)) === total,
      'every message delivered by the other process',
      60_000,
    );
    assert.is(hook.delivered().length, total, 'nothing sent twice');
  } finally {
    await b.kill9();
    await env.close();
    await hook.close();
  }
});

test.run();
