/**
 * The helper parties of `npm run bench:exporter`, each plain Node in its own process (`node -e`);
 * the load generator and the floors print the CPU time they used (`CPU <µs>`) when they end (the
 * sink's is read from /proc by the bench):
 * - the sink: raw `node:net` (requests parsed by hand: request line, content-length or chunked
 *   body), keep-alive, answers 200 with an empty body and counts messages per path (a request
 *   on `/batch-*` counts the messages its body carries), `GET /?path=P` → {count, first, last};
 *   `/arc-*` paths are a sink of limited capacity (bench:arc). No HTTP library: the sink must
 *   not be what sets the pace;
 * - the sink's load generator, to measure the sink alone: `wrk` (Debian's package, installed with
 *   apt-get when missing and we are root; a C event loop, a few µs a request) with a Lua script
 *   sending the POST the exporter sends (undici's headers, the bench template's body size), as many
 *   keep-alive connections as asked, one request at a time on each (no pipelining, as the exporter);
 *   it prints its own CPU time from /proc/self/stat at the n-th answer and ends. When wrk is not
 *   to be had (or BENCH_SINK_LOAD=node), the same POSTs from raw `node:net` (~20 µs a request: then
 *   the generator, not the sink, may set the rate; the bench says which one ran);
 * - the plain floor: XREAD COUNT 500 batches, one undici POST per message, `in-flight` at once
 *   over as many connections (one undici Pool to the sink), nothing acknowledged;
 * - the acking floor, the minimal correct at-least-once loop: XREADGROUP, one POST per message,
 *   then XACK, a slot freed only once its XACK is confirmed;
 * - the batched acking floor (at max-in-flight above 1; at 1 it is the acking floor): the acking
 *   floor with its acks amortised as the product's are, one XACK under way at a time carrying
 *   every id handled meanwhile, each slot freed once the XACK carrying its id is confirmed: the
 *   least that keeps the product's crash promise at max-in-flight N;
 * - the threaded acking floor (only with BENCH_THREADED_FLOOR=1): the acking floor split over two
 *   threads, to measure what taking the bus's work off the POSTing thread gains. The main thread
 *   only POSTs; a worker thread reads (XREADGROUP COUNT 256, at most 1,024 messages ahead of the
 *   POSTs) and sends one XACK per batch of handled ids; the threads exchange their batches once
 *   per turn of the event loop; a slot is freed once its XACK is confirmed.
 * The floors first send 2,000 POSTs to `/warm` (not counted): the product is JIT-warm from its
 * earlier runs, a floor a fresh process.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureCommand } from '../test/helpers/apt.js';
import { waitLine } from './product-proc.js';

/** Printed by every party at its end: its own CPU time (user + system), µs; a floor's from the end of its warm-up. */
const cpuLine = `
let cpuFrom;
const cpuAtEnd = () => { const u = process.cpuUsage(cpuFrom); process.stdout.write('CPU ' + (u.user + u.system) + '\\n'); };
`;

/**
 * An HTTP/1.1 message reader over a socket's bytes: calls \`on(buf, at, body)\` for each complete
 * request or response (it starts at \`at\` in \`buf\`; body by content-length, or chunked), keeps a
 * copy of what is incomplete; throws on a bad content-length or chunk size. The head is read on
 * the bytes (no string of it, no lower-cased copy): the sink's cost a request is mostly Node's.
 */
const httpReader = `
function chunkedEnd(buf, at) {
  const parts = [];
  for (let guard = 0; guard < 1e6; guard++) {
    const eol = buf.indexOf('\\r\\n', at);
    if (eol < 0) return undefined;
    const size = parseInt(buf.toString('latin1', at, eol), 16);
    if (!(size >= 0)) throw new Error('bad chunk size');
    if (buf.length < eol + 2 + size + 2) return undefined;
    if (size === 0) {
      const end = buf.indexOf('\\r\\n\\r\\n', eol);
      return end < 0 ? undefined : [Buffer.concat(parts), end + 4];
    }
    parts.push(buf.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
  throw new Error('too many chunks');
}
const CONTENT_LENGTH = 'content-length:', TRANSFER_ENCODING = 'transfer-encoding:';
function nameAt(buf, p, name) {
  for (let i = 0; i < name.length; i++) if ((buf[p + i] | 0x20) !== name.charCodeAt(i)) return false;
  return true;
}
// The body's length from the head in [at, end) of buf, read on the bytes: content-length, -1 when chunked, 0 without either.
function bodyLength(buf, at, end) {
  for (let p = buf.indexOf(10, at) + 1; p > 0 && p < end; p = buf.indexOf(10, p) + 1) {
    const c = buf[p] | 0x20;
    if (c === 0x63 && nameAt(buf, p, CONTENT_LENGTH)) {
      let q = p + CONTENT_LENGTH.length, len = 0, digits = 0;
      while (buf[q] === 0x20 || buf[q] === 0x09) q++;
      for (; buf[q] >= 0x30 && buf[q] <= 0x39 && digits < 15; q++, digits++) len = len * 10 + buf[q] - 0x30;
      if (digits === 0) throw new Error('bad content-length');
      return len;
    }
    if (c === 0x74 && nameAt(buf, p, TRANSFER_ENCODING) && buf.toString('latin1', p, end).split('\\r\\n')[0].toLowerCase().includes('chunked')) return -1;
  }
  return 0;
}
function httpReader(on) {
  let buf = null;
  return (chunk) => {
    buf = buf === null ? chunk : Buffer.concat([buf, chunk]);
    let at = 0;
    for (let guard = 0; guard < 1e6; guard++) {
      const end = buf.indexOf('\\r\\n\\r\\n', at);
      if (end < 0) break;
      const len = bodyLength(buf, at, end);
      let body, next;
      if (len >= 0) {
        next = end + 4 + len;
        if (buf.length < next) break;
        body = buf.subarray(end + 4, next);
      } else {
        const r = chunkedEnd(buf, end + 4);
        if (!r) break;
        [body, next] = r;
      }
      on(buf, at, body);
      at = next;
      if (at === buf.length) return void (buf = null);
    }
    // Kept as a copy: the sink reads into one buffer that its next read overwrites.
    buf = Buffer.from(buf.subarray(at));
  };
}
`;

const sinkCode = `${httpReader}
const net = require('node:net');
const stats = new Map();
const note = (url, n) => {
  const now = performance.now();
  let s = stats.get(url);
  if (!s) stats.set(url, (s = { count: 0, first: now, last: now }));
  s.count += n;
  s.last = now;
};
const OK = Buffer.from('HTTP/1.1 200 OK\\r\\ncontent-length: 0\\r\\nkeep-alive: timeout=60\\r\\n\\r\\n');
const UNAVAILABLE = Buffer.from('HTTP/1.1 503 Service Unavailable\\r\\ncontent-length: 0\\r\\n\\r\\n');
const BAD = Buffer.from('HTTP/1.1 400 Bad Request\\r\\ncontent-length: 0\\r\\nconnection: close\\r\\n\\r\\n');
const json = (text) => {
  const b = Buffer.from(text);
  return Buffer.concat([Buffer.from('HTTP/1.1 200 OK\\r\\ncontent-type: application/json\\r\\ncontent-length: ' + b.length + '\\r\\n\\r\\n'), b]);
};
// Every connection reads into this one buffer (a request is handled before the next read).
const readBuffer = Buffer.allocUnsafe(65536);
function serve(sock) {
  let answers = 0;
  const read = httpReader((buf, at, body) => {
    const sp = buf.indexOf(32, at);
    const url = buf.toString('latin1', sp + 1, buf.indexOf(32, sp + 1));
    if (buf[at] === 0x47) {
      const p = new URL(url, 'http://x').searchParams.get('path');
      sock.write(json(JSON.stringify(stats.get(p) || { count: 0, first: 0, last: 0 })));
      return;
    }
    if (url.startsWith('/arc-')) return arc(sock, url);
    note(url, url.startsWith('/batch-') ? body.toString('utf8').split('"id":').length - 1 : 1);
    // Requests that came together (pipelined) are answered in one write.
    if (++answers === 2) sock.cork();
    sock.write(OK);
  });
  let bad = false;
  return (chunk) => {
    if (bad) return;
    answers = 0;
    try {
      read(chunk);
    } catch {
      bad = true;
      sock.end(BAD);
    }
    if (answers > 1) sock.uncork();
  };
}
// Read without the stream layer ('data' events, a Buffer a read): the accepted handle made a
// socket with the onread option, one reused buffer; 'data' events when Node's internals differ.
const srv = net.createServer({ pauseOnConnect: true, noDelay: true }, (conn) => {
  const handle = conn._handle;
  let sock = conn;
  if (handle) {
    conn._handle = null;
    let onChunk;
    sock = new net.Socket({ handle, readable: true, writable: true, onread: { buffer: readBuffer, callback: (n, buf) => void onChunk(buf.subarray(0, n)) } });
    sock.setNoDelay(true);
    onChunk = serve(sock);
  } else {
    conn.on('data', serve(conn));
    conn.resume();
  }
  sock.on('error', () => {});
});
// Paths /arc-*: a sink of limited capacity: ARC_CAP1 requests at once (ARC_CAP2 after ARC_SWITCH
// deliveries), each held ARC_SERVICE_MS; a request beyond the capacity is answered 503 at once.
// (undici sends one request at a time on a connection: answers stay in order.)
const env = process.env;
const arcState = new Map();
function arc(sock, url) {
  let a = arcState.get(url);
  if (!a) arcState.set(url, (a = { active: 0 }));
  const cap = (stats.get(url)?.count ?? 0) < +env.ARC_SWITCH ? +env.ARC_CAP1 : +env.ARC_CAP2;
  if (a.active >= cap) return void sock.write(UNAVAILABLE);
  a.active++;
  setTimeout(() => {
    a.active--;
    note(url, 1);
    sock.write(OK);
  }, +env.ARC_SERVICE_MS);
}
srv.listen(0, '127.0.0.1', () => process.stdout.write('PORT ' + srv.address().port + '\\n'));
`;

/**
 * The POST the exporter sends in the bench (undici: host, connection, content-type,
 * content-length; the bench template's body, a stream id as \`id\`).
 */
const LOAD_BODY = '{"site":"bench","id":"1764310000000-123","temp":21}';

/**
 * The sink alone with wrk: its Lua script (argument: n). wrk adds host and content-length; a
 * static request (no \`request()\` function), so wrk formats it once. At the n-th answer it prints
 * its own CPU time (user + system, clock ticks of 10 ms, as /proc reads everywhere in the benches)
 * and exits: up to in-flight − 1 requests already sent are counted at the sink too.
 */
const wrkScript = `
wrk.method = "POST"
wrk.headers["connection"] = "keep-alive"
wrk.headers["content-type"] = "application/json"
wrk.body = '${LOAD_BODY}'
local n, answered = 0, 0
function init(args) n = tonumber(args[1]) end
local function cpu()
  local f = assert(io.open("/proc/self/stat"))
  local stat = f:read("*a")
  f:close()
  local fields = {}
  for w in stat:match("%) (.*)"):gmatch("%S+") do fields[#fields + 1] = w end
  return (tonumber(fields[12]) + tonumber(fields[13])) * 10000
end
function response(status)
  if status ~= 200 then
    io.stderr:write("sink answered " .. status .. "\\n")
    os.exit(1)
  end
  answered = answered + 1
  if answered == n then
    io.write(string.format("CPU %d\\n", cpu()))
    io.flush()
    os.exit(0)
  end
end
`;

/** The sink alone with raw \`node:net\` (when wrk is not to be had): \`n\` POSTs, \`inFlight\` at once over as many connections. */
const loadCode = `${cpuLine}${httpReader}
const net = require('node:net');
const [sink, inFlight, n] = process.argv.slice(1);
const u = new URL(sink);
const body = '${LOAD_BODY}';
const request = Buffer.from('POST ' + u.pathname + ' HTTP/1.1\\r\\nhost: ' + u.host + '\\r\\nconnection: keep-alive\\r\\ncontent-type: application/json\\r\\ncontent-length: ' + Buffer.byteLength(body) + '\\r\\n\\r\\n' + body);
let sent = 0, done = 0;
const finish = () => { cpuAtEnd(); process.exit(0); };
for (let i = 0; i < +inFlight; i++) {
  const sock = net.connect(+u.port, u.hostname);
  sock.setNoDelay(true);
  sock.on('error', (e) => { console.error(e); process.exit(1); });
  sock.on('connect', () => { if (sent < +n) { sent++; sock.write(request); } });
  sock.on('data', httpReader((buf, at) => {
    if (buf[at + 9] !== 0x32) { console.error('sink answered ' + buf.toString('latin1', at, buf.indexOf(13, at))); process.exit(1); }
    if (++done === +n) finish();
    else if (sent < +n) { sent++; sock.write(request); }
  }));
}
setTimeout(() => { console.error('load generator: ' + done + ' of ' + n + ' after 10 minutes'); process.exit(1); }, 600000).unref();
`;

/**
 * What both floors share: one undici Pool to the sink's origin with as many connections as
 * POSTs in flight (the floors talk to one origin: no Agent lookup per request), the headers as a
 * flat array, and a warm-up of WARM POSTs on the path \`/warm\` (not counted at the measured
 * path) before the measured loop: the product is a long-lived process, JIT-warm from its earlier
 * runs, and a floor is a fresh process each run.
 */
const floorCommon = `
const { Pool } = require('undici');
const WARM = 2000;
const HEADERS = ['content-type', 'application/json'];
function sinkPool(sink, inFlight) {
  const u = new URL(sink);
  return { pool: new Pool(u.origin, { connections: inFlight, keepAliveTimeout: 60000 }), path: u.pathname };
}
async function postTo(pool, path, body) {
  const res = await pool.request({ path, method: 'POST', body, headers: HEADERS });
  await res.body.dump();
  if (res.statusCode !== 200) throw new Error('sink answered ' + res.statusCode);
}
async function warmUp(pool, inFlight) {
  const body = JSON.stringify({ warm: true, pad: 'x'.repeat(150) });
  let next = 0;
  const worker = async () => { while (next < WARM) { next++; await postTo(pool, '/warm', body); } };
  await Promise.all(Array.from({ length: inFlight }, worker));
}
`;

const floorCode = `${cpuLine}${floorCommon}
const { createClient } = require('redis');
const [url, sink, inFlight, messages, topic] = process.argv.slice(1);
(async () => {
  const c = createClient({ url });
  await c.connect();
  const { pool, path } = sinkPool(sink, +inFlight);
  await warmUp(pool, +inFlight);
  cpuFrom = process.cpuUsage();
  let last = '0', done = 0, running = 0, freed;
  const post = async (body) => {
    running++;
    try {
      await postTo(pool, path, body);
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
  await pool.close();
  await c.close();
})().then(() => { cpuAtEnd(); process.exit(0); }, (e) => { console.error(e); process.exit(1); });
`;

/**
 * A floor that reads through a consumer group of its own: XREADGROUP COUNT 500, and for each
 * entry, once fewer than in-flight are running, \`post(id, body)\` (defined by \`perMessage\`,
 * which frees the slots of n messages with \`free(n)\`).
 */
const groupFloorCode = (perMessage: string) => `${cpuLine}${floorCommon}
const { createClient } = require('redis');
const [url, sink, inFlight, messages, topic, group] = process.argv.slice(1);
const key = 'volga:' + topic;
const fail = (e) => { console.error(e); process.exit(1); };
let done = 0, running = 0, freed;
const free = (n) => { running -= n; done += n; const f = freed; freed = undefined; f && f(); };
(async () => {
  const c = createClient({ url });
  await c.connect();
  await c.sendCommand(['XGROUP', 'CREATE', key, group, '0']);
  const { pool, path } = sinkPool(sink, +inFlight);
  await warmUp(pool, +inFlight);
  cpuFrom = process.cpuUsage();
${perMessage}
  for (let guard = 0; done + running < +messages && guard < +messages; guard++) {
    const raw = await c.sendCommand(['XREADGROUP', 'GROUP', group, 'floor', 'COUNT', '500', 'STREAMS', key, '>']);
    const entries = raw && raw[0] && raw[0][1] ? raw[0][1] : [];
    if (entries.length === 0) break;
    for (const e of entries) {
      while (running >= +inFlight) await new Promise((r) => { freed = r; });
      running++;
      post(String(e[0]), String(e[1][1])).catch(fail);
    }
  }
  while (running > 0) await new Promise((r) => { freed = r; });
  await pool.close();
  await c.close();
})().then(() => { cpuAtEnd(); process.exit(0); }, fail);
`;

/** The acking floor: its POST, then its XACK, then its slot is free. */
const ackingFloorCode = groupFloorCode(`
  const post = async (id, body) => {
    try {
      await postTo(pool, path, body);
      await c.sendCommand(['XACK', key, group, id]);
    } finally { free(1); }
  };`);

/** The batched acking floor: one XACK under way at a time, carrying every id handled meanwhile; its slots are freed once it is confirmed. */
const batchedFloorCode = groupFloorCode(`
  let acks = [], sending = false;
  const sendAcks = async () => {
    sending = true;
    while (acks.length > 0) {
      const ids = acks;
      acks = [];
      await c.sendCommand(['XACK', key, group, ...ids]);
      free(ids.length);
    }
    sending = false;
  };
  const post = async (id, body) => {
    await postTo(pool, path, body);
    acks.push(id);
    if (!sending) sendAcks().catch(fail);
  };`);

/** The worker thread of the threaded acking floor: reads ahead as far as its credit goes, acks the batches it is sent. */
const threadedWorkerCode = `
const { parentPort, workerData } = require('node:worker_threads');
const { createClient } = require('redis');
const { url, key, group, messages } = workerData;
(async () => {
  const c = createClient({ url });
  await c.connect();
  await c.sendCommand(['XGROUP', 'CREATE', key, group, '0']);
  let credit = 0, read = 0, creditCame;
  parentPort.on('message', (m) => {
    if (m.credit) { credit += m.credit; const w = creditCame; creditCame = undefined; if (w) w(); }
    if (m.ack) c.sendCommand(['XACK', key, group, ...m.ack]).then(
      () => parentPort.postMessage({ confirmed: m.ack.length }),
      (e) => { console.error(e); process.exit(1); });
  });
  parentPort.postMessage({ ready: true });
  for (let guard = 0; read < messages && guard < messages; guard++) {
    while (credit <= 0) await new Promise((r) => { creditCame = r; });
    const raw = await c.sendCommand(['XREADGROUP', 'GROUP', group, 'floor', 'COUNT', '256', 'STREAMS', key, '>']);
    const entries = raw && raw[0] && raw[0][1] ? raw[0][1] : [];
    if (entries.length === 0) break;
    const ids = new Array(entries.length), bodies = new Array(entries.length);
    for (let i = 0; i < entries.length; i++) { ids[i] = String(entries[i][0]); bodies[i] = String(entries[i][1][1]); }
    read += entries.length;
    credit -= entries.length;
    parentPort.postMessage({ ids, bodies });
  }
})().catch((e) => { console.error(e); process.exit(1); });
`;

const threadedFloorCode = `${cpuLine}${floorCommon}
const { Worker } = require('node:worker_threads');
const [url, sink, inFlight, messages, topic, group] = process.argv.slice(1);
const N = +inFlight, M = +messages;
(async () => {
  const { pool, path } = sinkPool(sink, N);
  await warmUp(pool, N);
  const worker = new Worker(${JSON.stringify(threadedWorkerCode)}, { eval: true, workerData: { url, key: 'volga:' + topic, group, messages: M } });
  const ids = [], bodies = [];
  let next = 0, running = 0, done = 0, credit = 0, acks = [], flushing = false, finish;
  const ended = new Promise((r) => { finish = r; });
  // What the main thread has for the worker goes once per turn of the event loop.
  const flush = () => {
    flushing = false;
    if (acks.length > 0) { worker.postMessage({ ack: acks }); acks = []; }
    if (credit > 0) { worker.postMessage({ credit }); credit = 0; }
  };
  const later = () => { if (!flushing) { flushing = true; setImmediate(flush); } };
  const pump = () => {
    while (running < N && next < ids.length) {
      const id = ids[next], body = bodies[next++];
      running++;
      credit++;
      postTo(pool, path, body).then(() => { acks.push(id); later(); }, (e) => { console.error(e); process.exit(1); });
    }
    if (next > 4096) { ids.splice(0, next); bodies.splice(0, next); next = 0; }
    later();
  };
  worker.on('message', (m) => {
    if (m.ready) { cpuFrom = process.cpuUsage(); worker.postMessage({ credit: 1024 }); }
    if (m.ids) { ids.push(...m.ids); bodies.push(...m.bodies); pump(); }
    if (m.confirmed) { running -= m.confirmed; done += m.confirmed; if (done >= M) finish(); else pump(); }
  });
  worker.on('error', (e) => { console.error(e); process.exit(1); });
  await ended;
  await pool.close();
})().then(() => { cpuAtEnd(); process.exit(0); }, (e) => { console.error(e); process.exit(1); });
`;

export type Sink = { url: string; child: ChildProcess };

/** With BENCH_PROFILE=1 the helper parties are profiled (./profiles/helpers), to set beside the product's profile. */
const profileArgs = (): string[] =>
  process.env.BENCH_PROFILE === '1' ? ['--cpu-prof', '--cpu-prof-dir', join(process.cwd(), 'profiles', 'helpers')] : [];

/** The Node sink (above): every path, `/arc-*` included. */
export async function startSink(env: Record<string, string>): Promise<Sink> {
  // Profiled with the others (BENCH_PROFILE=1): its profile is written when the bench stops it.
  const profile = profileArgs();
  const code = profile.length > 0 ? `${sinkCode}\nprocess.on('SIGTERM', () => process.exit(0));` : sinkCode;
  const child = spawn(process.execPath, [...profile, '-e', code], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, ...env },
  });
  const m = await waitLine(child, /PORT (\d+)/, 'sink');
  return { url: `http://127.0.0.1:${m[1]}`, child };
}

/**
 * The native sink (scripts/sink.c, the Node sink's behaviour but `/arc-*`), compiled with
 * `cc -O2` into a temporary directory (Debian's gcc installed with apt-get when missing and we
 * are root). A few µs of CPU a request against the Node sink's ~10: on two cores shared by every
 * party, what the sink does not take is left to the party measured.
 */
export async function startNativeSink(): Promise<Sink> {
  ensureCommand('cc', 'gcc');
  const dir = mkdtempSync(join(tmpdir(), 'bench-sink-'));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  const exe = join(dir, 'sink');
  const source = fileURLToPath(new URL('./sink.c', import.meta.url));
  const cc = spawnSync('cc', ['-O2', '-o', exe, source], { encoding: 'utf8' });
  if (cc.status !== 0) throw new Error(`cc ${source} failed: ${cc.stderr || cc.error?.message}`);
  const child = spawn(exe, [], { stdio: ['ignore', 'pipe', 'inherit'] });
  const m = await waitLine(child, /PORT (\d+)/, 'native sink');
  return { url: `http://127.0.0.1:${m[1]}`, child };
}

/** Runs one party to its end; resolves with the CPU time it used (µs), rejects when it fails. */
function run(command: string, args: string[]): Promise<number> {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => {
      const cpu = /CPU (\d+)/.exec(out);
      if (code === 0 && cpu) resolve(Number(cpu[1]));
      else reject(new Error(`party ${command} exited with ${code}${cpu ? '' : ' before its CPU line'}`));
    });
  });
}
/** A helper party in plain Node (profiled with BENCH_PROFILE=1, as the sink). */
const node = (code: string, args: string[]) => run(process.execPath, [...profileArgs(), '-e', code, ...args]);

let generator: { name: 'wrk' | 'node:net'; script?: string } | undefined;

/**
 * The sink's load generator of this run: wrk (installed with apt-get when missing and root),
 * or raw node:net when wrk is not to be had or BENCH_SINK_LOAD=node (printed once, with why).
 */
export function sinkLoadGenerator(): 'wrk' | 'node:net' {
  if (generator) return generator.name;
  let why = 'BENCH_SINK_LOAD=node';
  if (process.env.BENCH_SINK_LOAD !== 'node')
    try {
      ensureCommand('wrk', 'wrk');
      const dir = mkdtempSync(join(tmpdir(), 'bench-wrk-'));
      process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
      const script = join(dir, 'post.lua');
      writeFileSync(script, wrkScript);
      return (generator = { name: 'wrk', script }).name;
    } catch (err) {
      why = err instanceof Error ? err.message : String(err);
    }
  process.stderr.write(
    `note: the sink alone is loaded by raw node:net (${why}); it costs ~20 µs a request, so it, not the sink, may set that rate\n`,
  );
  return (generator = { name: 'node:net' }).name;
}

/** The sink alone: \`n\` POSTs (at least), \`inFlight\` connections with one request at a time on each; the generator's CPU (µs). */
export function loadSink(target: string, inFlight: number, n: number): Promise<number> {
  sinkLoadGenerator();
  if (generator?.script)
    return run('wrk', [
      '-t1',
      `-c${inFlight}`,
      '-d600s',
      '--timeout',
      '30s',
      '-s',
      generator.script,
      target,
      '--',
      String(n),
    ]);
  return node(loadCode, [target, String(inFlight), String(n)]);
}

export const plainFloor = (redisUrl: string, target: string, inFlight: number, n: number, topic: string) =>
  node(floorCode, [redisUrl, target, String(inFlight), String(n), topic]);

/** A floor that reads through a consumer group of its own (`group`). */
const groupFloor =
  (code: string) =>
  (redisUrl: string, target: string, inFlight: number, n: number, topic: string, group: string): Promise<number> =>
    node(code, [redisUrl, target, String(inFlight), String(n), topic, group]);

export const ackingFloor = groupFloor(ackingFloorCode);
export const threadedFloor = groupFloor(threadedFloorCode);
export const batchedFloor = groupFloor(batchedFloorCode);
