/**
 * Mutual TLS (`client-certificate`, CONTRACT §12) through a real HTTPS receiver that demands a
 * client certificate of a CA made with openssl at test time: the certificate from a vault
 * secret is presented, a rotation of the secret is used from the next message on (no restart),
 * a value that is not a certificate makes the status `error` without showing it; and the HTTP
 * agents belong to a runtime: stopping one runtime leaves another's POSTs alone (#20 point 6).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { openEnv, staticSecrets, type Env } from '../helpers/exporter-proc.js';
import { startWebhookServer, type WebhookServer } from '../helpers/webhook-server.js';
import { makeCerts, makeClientCert, type TestCerts } from '../helpers/tls.js';
import type { Runtime } from '../../src/exporter/runtime.js';
import type { JsonObject } from '../../src/lib/json.js';
import { freshRedisDb } from '../helpers/redis.js';
import { sleep } from '../helpers/wait.js';

let env: Env;
let hook: WebhookServer;
let rt: Runtime;
let certs: TestCerts;
const vault: Record<string, Record<string, string>> = {};

test.before(async () => {
  certs = makeCerts();
  env = await openEnv(await freshRedisDb(10));
  hook = await startWebhookServer({ tls: { key: certs.key, cert: certs.cert, clientCa: certs.caCert } });
  vault['default/v1/cc'] = makeClientCert(certs, 'client-a');
  vault['default/v1/bad'] = { cert: 'not a certificate', key: 'secret-key-text' };
  await env.put('strongbox/vaults/v1/secrets/cc', { name: 'cc' });
  rt = await env.start({ secrets: staticSecrets(vault), secretRetryMs: 200 });
});
test.after(async () => {
  await env.close();
  await hook.close();
});

const mtls = (secret: string): JsonObject => ({
  'ca-cert': certs.caCert,
  'client-certificate': { vault: 'v1', secret, 'cert-key': 'cert', 'key-key': 'key' },
});

test('the vault certificate is presented; a rotated one is used from the next message on', async () => {
  const { topic, name } = await env.exporter(rt, hook.url, mtls('cc'));
  await env.produce(topic, 'one');
  await hook.waitFor((r) => r.some((x) => x.body === 'one' && x.status === 200), 'first message');
  assert.is(hook.delivered().find((x) => x.body === 'one')?.clientCn, 'client-a');

  vault['default/v1/cc'] = makeClientCert(certs, 'client-b');
  // Any change to the secret store makes the runtime read the exporters' secrets again.
  await env.put('strongbox/vaults/v1/secrets/cc', { name: 'cc', description: 'rotated' });
  // One message every 100 ms until the new certificate shows (at most 100 messages).
  let n = 0;
  while (!hook.delivered().some((x) => x.clientCn === 'client-b') && n < 100) {
    await env.produce(topic, `after-${n++}`);
    await sleep(100);
  }
  assert.ok(
    hook.delivered().some((x) => x.clientCn === 'client-b'),
    'a POST with the rotated certificate',
  );
  const s = await env.state(rt, name, (x) => x.delivered === n + 1, 'every message delivered');
  assert.is(s.status, 'ready');
  assert.is(s['failed-attempts'], 0, 'no attempt failed across the rotation');
});

test('a vault value that is not a certificate: status error, the value never shown; fixed, it runs again by itself', async () => {
  const { topic, name } = await env.exporter(rt, hook.url, mtls('bad'), false);
  const s = await env.state(rt, name, (x) => x.status === 'error', 'error');
  assert.match(String(s['last-error']), /client-certificate: the vault value is not a usable PEM certificate and key/);
  assert.not.ok(JSON.stringify(s).includes('secret-key-text'));
  // Retried (every 200 ms here) only once the value changes: the status stays as it is meanwhile.
  await sleep(600);
  assert.is((await env.state(rt, name, () => true, 'state')).status, 'error');
  await env.produce(topic, 'waited');
  vault['default/v1/bad'] = makeClientCert(certs, 'client-fixed');
  await hook.waitFor((r) => r.some((x) => x.body === 'waited' && x.status === 200), 'delivered with the fixed value');
  assert.is(hook.delivered().find((x) => x.body === 'waited')?.clientCn, 'client-fixed');
  await env.state(rt, name, (x) => x.status === 'ready', 'ready');
});

test('without a client certificate the receiver refuses the handshake: a failed attempt', async () => {
  const { topic, name } = await env.exporter(rt, hook.url, { 'ca-cert': certs.caCert, tries: 1 });
  await env.produce(topic, 'x');
  const s = await env.state(rt, name, (x) => x.dropped === 1, 'dropped');
  assert.match(String(s['last-error']), /POST to https:\/\/127\.0\.0\.1:\d+ failed/);
});

test('agents belong to a runtime: stopping one runtime leaves the other delivering', async () => {
  const other = await env.start({ site: 'other-site', secrets: staticSecrets(vault) });
  const { topic, name } = await env.exporter(rt, hook.url, mtls('cc'));
  await env.state(other, name, (x) => x.status === 'ready', 'ready at the other site');
  await other.stop(1000);
  await env.produce(topic, 'still');
  await hook.waitFor((r) => r.some((x) => x.body === 'still' && x.status === 200), 'delivered after the stop');
  await env.state(rt, name, (x) => x.delivered === 1, 'counted');
});

test.run();
