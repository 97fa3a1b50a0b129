/**
 * Each TLS option through a real HTTPS receiver whose CA is made with openssl at test time:
 * the unknown CA fails, ca-cert passes (with and without the root bundle), tls-verify false
 * passes, and server-name-indication passes with the certificate's name, fails with another.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openEnv, fakeClock, type Env } from '../helpers/exporter-proc.js';
import { startWebhookServer, type WebhookServer } from '../helpers/webhook-server.js';
import { makeCerts, type TestCerts } from '../helpers/tls.js';
import type { Runtime } from '../../src/exporter/runtime.js';
import type { JsonObject } from '../../src/lib/json.js';
import { freshRedisDb } from '../helpers/redis.js';

let env: Env;
let hook: WebhookServer;
let rt: Runtime;
let certs: TestCerts;
let seq = 0;

test.before(async () => {
  certs = makeCerts();
  env = await openEnv(await freshRedisDb(3));
  hook = await startWebhookServer({ tls: { key: certs.key, cert: certs.cert } });
  rt = await env.start({ clock: fakeClock() });
});
test.after(async () => {
  await env.close();
  await hook.close();
});

/** Sends one message with these TLS fields; returns the exporter's state once it is handled. */
async function attempt(tls: JsonObject) {
  const name = `tls-${++seq}`;
  const topic = `tls-topic-${seq}`;
  await env.webhook({
    name,
    topics: [topic],
    'site-placement': { 'all-sites': true },
    url: `${hook.url}/${name}`,
    data: 'x',
    tries: 1,
    ...tls,
  });
  await env.state(rt, name, (s) => s.status === 'ready', 'ready');
  await env.produce(topic, 'x');
  const s = await env.state(rt, name, (x) => Number(x.delivered) + Number(x.dropped) === 1, 'handled');
  const got = hook.delivered().filter((r) => r.path === `/${name}`);
  return { state: s, delivered: got.length, sni: got[0]?.sni };
}

const cases: Array<[string, () => JsonObject, boolean, RegExp?]> = [
  ['an unknown CA fails verification', () => ({}), false, /certificate/i],
  ['tls-verify false accepts the unknown CA', () => ({ 'tls-verify': false }), true],
  [
    'ca-cert with use-root-ca-certs false passes',
    () => ({ 'ca-cert': certs.caCert, 'use-root-ca-certs': false }),
    true,
  ],
  ['ca-cert with the root bundle passes', () => ({ 'ca-cert': certs.caCert }), true],
  ['use-root-ca-certs false without ca-cert trusts nothing', () => ({ 'use-root-ca-certs': false }), false],
  [
    'server-name-indication with the certificate name passes',
    () => ({ 'ca-cert': certs.caCert, 'server-name-indication': certs.serverName }),
    true,
  ],
  [
    'server-name-indication with another name fails',
    () => ({ 'ca-cert': certs.caCert, 'server-name-indication': 'wrong.example' }),
    false,
    /wrong\.example|altnames|Hostname/i,
  ],
];

for (const [label, fields, ok, error] of cases) {
  test(label, async () => {
    const f = fields();
    const { state, delivered, sni } = await attempt(f);
    if (ok && f['server-name-indication']) assert.is(sni, f['server-name-indication']);
    assert.is(delivered, ok ? 1 : 0);
    assert.is(state.delivered, ok ? 1 : 0);
    assert.is(state.dropped, ok ? 0 : 1);
    if (error) assert.match(String(state['last-error']), error);
  });
}

test.run();
