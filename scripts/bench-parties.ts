/**
 * The helper parties of `npm run bench:exporter`, each plain Node in its own process (`node -e`):
 * - the sink: raw `node:http`, keep-alive, answers 204 and counts messages per path (a request
 *   on `/batch-*` counts the messages its body carries), `GET /?path=P` → {count, first, last};
 *   `/arc-*` paths are a sink of limited capacity (bench:arc);
 * - the sink's load generator: as many POSTs at once as asked, over as many keep-alive
 *   connections, to measure the sink alone;
 * - the plain floor: XREAD COUNT 500 batches, one undici POST per message, `in-flight` at once
 *   over as many connections, nothing acknowledged;
 * - the acking floor, the minimal correct at-least-once loop: XREADGROUP, one POST per message,
 *   then XACK, a slot freed only once its XACK is confirmed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { waitLine } from './product-proc.js';

const sinkCode = `
const http = require('node:http');
const stats = new Map();
const note = (url, n) => {
  const now = performance.now();
  let s = stats.get(url);
  if (!s) stats.set(url, (s = { count: 0, first: now, last: now }));
  s.count += n;
  s.last = now;
};
const srv = http.createServer((req, res) => {
  if (req.method === 'GET') {
    const p = new URL(req.url, 'http://x').searchParams.get('path');
    res.end(JSON.stringify(stats.get(p) || { count: 0, first: 0, last: 0 }));
    return;
  }
  if (req.url.startsWith('/arc-')) {
    req.resume();
    req.on('end', () => arc(req, res));
    return;
  }
  if (req.url.startsWith('/batch-')) {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      note(req.url, body.split('"id":').length - 1);
      res.writeHead(204);
      res.end();
    });
    return;
  }
  req.resume();
  req.on('end', () => {
    note(req.url, 1);
    res.writeHead(204);
    res.end();
  });
});
// Paths /arc-*: a sink of limited capacity: ARC_CAP1 requests at once (ARC_CAP2 after ARC_SWITCH
// deliveries), each held ARC_SERVICE_MS; a request beyond the capacity is answered 503 at once.
const env = process.env;
const arcState = new Map();
function arc(req, res) {
  let a = arcState.get(req.url);
  if (!a) arcState.set(req.url, (a = { active: 0 }));
  const cap = (stats.get(req.url)?.count ?? 0) < +env.ARC_SWITCH ? +env.ARC_CAP1 : +env.ARC_CAP2;
  if (a.active >= cap) { res.writeHead(503); res.end(); return; }
  a.active++;
  setTimeout(() => {
    a.active--;
    note(req.url, 1);
    res.writeHead(200);
    res.end();
  }, +env.ARC_SERVICE_MS);
}
srv.keepAliveTimeout = 60000;
srv.listen(0, '127.0.0.1', () => process.stdout.write('PORT ' + srv.address().port + '\\n'));
`;

/** The sink alone: `n` POSTs of a 60-byte body, `inFlight` at once over as many connections. */
const loadCode = `
const { Agent, request } = require('undici');
const [sink, inFlight, n] = process.argv.slice(1);
(async () => {
  const agent = new Agent({ connections: +inFlight, keepAliveTimeout: 60000 });
  const body = JSON.stringify({ site: 'bench', id: '1732550000000-0', temp: 21, pad: 'xxxxxxxx' });
  let sent = 0;
  const worker = async () => {
    while (sent < +n) {
      sent++;
      const res = await request(sink, { method: 'POST', body, dispatcher: agent, headers: { 'content-type': 'application/json' } });
      await res.body.dump();
    }
  };
  await Promise.all(Array.from({ length: +inFlight }, worker));
  await agent.close();
})().then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });
`;

const floorCode = `
const { createClient } = require('redis');
const { Agent, request } = require('undici');
const [url, sink, inFlight, messages, topic] = process.argv.slice(1);
(async () => {
  const c = createClient({ url });
  await c.connect();
  const agent = new Agent({ connections: +inFlight, keepAliveTimeout: 60000 });
  let last = '0', done = 0, running = 0, freed;
  const post = async (body) => {
    running++;
    try {
      const res = await request(sink, { method: 'POST', body, dispatcher: agent, headers: { 'content-type': 'application/json' } });
      await res.body.dump();
      done++;
    } finally { running--; const f = freed; freed = undefined; f && f(); }
  };
  for (let guard = 0; done + running < +messages && guard < +messages; guard++) {
    const raw = await c.sendCommand(['XREAD', 'COUNT', '500', 'STREAMS', 'volga:' + topic, last]);
    const entries = raw && raw[0] && raw[0][1] ? raw[0][1] : [];
    if (entries.length === 0) break;
    for (const e of entries) {
      last = String(e[0]);
      while (running >= +inFlight) await new Promise((r) => { freed = r; });
      void post(String(e[1][1]));
    }
  }
  while (running > 0) await new Promise((r) => { freed = r; });
  await agent.close();
  await c.close();
})().then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });
`;

const ackingFloorCode = `
const { createClient } = require('redis');
const { Agent, request } = require('undici');
const [url, sink, inFlight, messages, topic, group] = process.argv.slice(1);
const key = 'volga:' + topic;
(async () => {
  const c = createClient({ url });
  await c.connect();
  await c.sendCommand(['XGROUP', 'CREATE', key, group, '0']);
  const agent = new Agent({ connections: +inFlight, keepAliveTimeout: 60000 });
  let done = 0, running = 0, freed;
  const post = async (id, body) => {
    running++;
    try {
      const res = await request(sink, { method: 'POST', body, dispatcher: agent, headers: { 'content-type': 'application/json' } });
      await res.body.dump();
      await c.sendCommand(['XACK', key, group, id]);
      done++;
    } finally { running--; const f = freed; freed = undefined; f && f(); }
  };
  for (let guard = 0; done + running < +messages && guard < +messages; guard++) {
    const raw = await c.sendCommand(['XREADGROUP', 'GROUP', group, 'floor', 'COUNT', '500', 'STREAMS', key, '>']);
    const entries = raw && raw[0] && raw[0][1] ? raw[0][1] : [];
    if (entries.length === 0) break;
    for (const e of entries) {
      while (running >= +inFlight) await new Promise((r) => { freed = r; });
      void post(String(e[0]), String(e[1][1]));
    }
  }
  while (running > 0) await new Promise((r) => { freed = r; });
  await agent.close();
  await c.close();
})().then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });
`;

export async function startSink(env: Record<string, string>): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, ['-e', sinkCode], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, ...env },
  });
  const m = await waitLine(child, /PORT (\d+)/, 'sink');
  return { url: `http://127.0.0.1:${m[1]}`, child };
}

/** Runs one party to its end; rejects when it fails. */
function run(code: string, args: string[]): Promise<void> {
  const child = spawn(process.execPath, ['-e', code, ...args], { stdio: ['ignore', 'inherit', 'inherit'] });
  return new Promise((resolve, reject) =>
    child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`party exited with ${code}`)))),
  );
}

export const loadSink = (target: string, inFlight: number, n: number): Promise<void> =>
  run(loadCode, [target, String(inFlight), String(n)]);

export const plainFloor = (redisUrl: string, target: string, inFlight: number, n: number, topic: string) =>
  run(floorCode, [redisUrl, target, String(inFlight), String(n), topic]);

export const ackingFloor = (
  redisUrl: string,
  target: string,
  inFlight: number,
  n: number,
  topic: string,
  group: string,
): Promise<void> => run(ackingFloorCode, [redisUrl, target, String(inFlight), String(n), topic, group]);
