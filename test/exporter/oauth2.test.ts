/**
 * `oauth2` client credentials through a token endpoint the test starts (a real HTTP server on
 * port 0) and a webhook receiver that accepts only the token it issued last: the token is
 * fetched once and reused, fetched again once it expires (a clock moved by the test) and after a
 * 401, and a failing token endpoint is a failed attempt whose last error names it.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { openEnv, staticSecrets, type Env } from '../helpers/exporter-proc.js';
import { startWebhookServer, type WebhookServer } from '../helpers/webhook-server.js';
import type { Clock, Runtime } from '../../src/exporter/runtime.js';
import { systemClock } from '../../src/lib/clock.js';
import { freshRedisDb } from '../helpers/redis.js';

let env: Env;
let hook: WebhookServer;
let rt: Runtime;
let offset = 0;
const clock: Clock = { now: () => Date.now() + offset, sleep: systemClock.sleep };
const issued: Array<{ auth: string; body: string }> = [];
let valid = '';
let failing = false;
/** A token no header can carry (the endpoint answers it while set). */
let unsendable = false;
const tokenServer = createServer((req: IncomingMessage, res) => {
  let body = '';
  req.on('data', (c: Buffer) => (body += c.toString()));
  req.on('end', () => {
    issued.push({ auth: req.headers.authorization ?? '', body });
    if (failing) {
      res.writeHead(500).end('down');
      return;
    }
    valid = unsendable ? `tok-${issued.length}\r\nInjected: 1` : `tok-${issued.length}`;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ access_token: valid, token_type: 'Bearer', expires_in: 3600 }));
  });
});
let tokenUrl = '';

test.before(async () => {
  await new Promise<void>((r) => tokenServer.listen(0, '127.0.0.1', r));
  tokenUrl = `http://127.0.0.1:${(tokenServer.address() as AddressInfo).port}/token`;
  env = await openEnv(await freshRedisDb(13));
  hook = await startWebhookServer();
  hook.script((_, req) => (req.headers.authorization === `Bearer ${valid}` ? {} : { status: 401 }));
  await env.put('strongbox/vaults/v1/secrets/oa', { name: 'oa' });
  rt = await env.start({ clock, secrets: staticSecrets({ 'default/v1/oa': { secret: 's3cret' } }) });
});
test.after(async () => {
  await env.close();
  await hook.close();
  await new Promise<void>((r) => tokenServer.close(() => r()));
});

const oauth = () => ({
  'retry-interval': '10ms',
  oauth2: {
    'token-url': tokenUrl,
    'client-id': 'edge',
    'client-secret': { vault: 'v1', secret: 'oa', key: 'secret' },
    scope: 'hooks.write',
  },
});

test('one token for many messages; again on expiry and after a 401; a failing endpoint is the last error', async () => {
  const { topic, name } = await env.exporter(rt, hook.url, oauth());
  for (let i = 0; i < 5; i++) await env.produce(topic, `m${i}`);
  await env.state(rt, name, (s) => s.delivered === 5, 'five delivered');
  assert.is(issued.length, 1, 'one token fetch');
  assert.is(issued[0]!.auth, `Basic ${Buffer.from('edge:s3cret').toString('base64')}`);
  assert.is(new URLSearchParams(issued[0]!.body).get('grant_type'), 'client_credentials');
  assert.is(new URLSearchParams(issued[0]!.body).get('scope'), 'hooks.write');

  offset += 3600_000; // past expires_in
  await env.produce(topic, 'after-expiry');
  await env.state(rt, name, (s) => s.delivered === 6, 'delivered after expiry');
  assert.is(issued.length, 2, 'fetched again on expiry');

  valid = 'revoked-by-the-webhook';
  await env.produce(topic, 'after-revoke');
  const after401 = await env.state(rt, name, (s) => s.delivered === 7, 'delivered after a 401');
  assert.is(issued.length, 3, 'fetched again after the 401');
  // The refused POST counts as a failed attempt (not as a retry: the status stays ready).
  assert.is(after401['failed-attempts'], 1);
  assert.match(String(after401['last-error']), /answered HTTP 401/);
  assert.is(after401.status, 'ready');

  failing = true;
  offset += 3600_000;
  await env.produce(topic, 'endpoint-down');
  const s = await env.state(rt, name, (x) => x.status === 'retrying', 'retrying');
  assert.match(String(s['last-error']), /^oauth2: token endpoint http:\/\/127\.0\.0\.1:\d+ answered HTTP 500$/);
  assert.not.ok(JSON.stringify(s).includes('s3cret'));
  failing = false;
  await env.state(rt, name, (x) => x.delivered === 8 && x.status === 'ready', 'delivered once the endpoint is back');

  // A token that no header can carry is the endpoint's failure, and is not kept: the next
  // fetch (at the next attempt) gets a good one.
  unsendable = true;
  offset += 3600_000;
  const fetches = issued.length;
  await env.produce(topic, 'bad-token');
  const bad = await env.state(rt, name, (x) => x.status === 'retrying', 'retrying');
  assert.match(
    String(bad['last-error']),
    /^oauth2: token endpoint .* answered an access_token that is not a valid header value$/,
  );
  unsendable = false;
  await env.state(rt, name, (x) => x.delivered === 9 && x.status === 'ready', 'delivered with the next token');
  assert.ok(issued.length >= fetches + 2, 'fetched again, not cached');
  assert.not.ok(
    hook.requests.some((r) => 'injected' in r.headers),
    'nothing injected',
  );
});

test.run();
