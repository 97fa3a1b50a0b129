/**
 * A real HTTP or HTTPS webhook receiver on port 0 whose replies are scripted per request:
 * `{status}` (default 200), `{status: 503, headers: {'retry-after': '1'}}`, `{hang: true}`
 * (never answers), `{hangBody: true}` (the status line and headers, then part of a body that
 * never ends), `{reset: true}` (destroys the socket), `{delayMs}` (slow). Requests past
 * the end of the script get 200. Every request is recorded with its body and headers.
 */
import {
  createServer as createHttp,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttps } from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { eventually } from './wait.js';

export type Reply = {
  status?: number;
  headers?: Record<string, string>;
  hang?: boolean;
  /** Answers its status and headers, then a body that never ends. */
  hangBody?: boolean;
  reset?: boolean;
  delayMs?: number;
  /** The response body (default `ok`). */
  body?: string;
};
/** `status` is what was answered (0 for hang and reset); every request is recorded. */
export type Received = {
  n: number;
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  status: number;
  sni: string | undefined;
  /** When the request's body had arrived (Date.now()). */
  time: number;
  /** The CN of the client certificate (mutual TLS, with `tls.clientCa`), else undefined. */
  clientCn: string | undefined;
};

export type WebhookServer = {
  url: string;
  port: number;
  requests: Received[];
  /** Requests answered with a 2xx: the deliveries. */
  delivered(): Received[];
  /** Replaces the script; numbering continues. */
  script(replies: Reply[] | ((n: number, req: Received) => Reply)): void;
  /** Polls until `cond` holds or the deadline passes (then throws with `what`). */
  waitFor(cond: (reqs: Received[]) => boolean, what: string, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
};

/** The server name the client sent in TLS SNI (undefined over plain HTTP or without SNI). */
function sniOf(req: IncomingMessage): string | undefined {
  const name: unknown = (req.socket as { servername?: unknown }).servername;
  return typeof name === 'string' ? name : undefined;
}

function clientCnOf(req: IncomingMessage): string | undefined {
  const sock = req.socket as { getPeerCertificate?: () => { subject?: { CN?: unknown } } };
  const cn = sock.getPeerCertificate?.()?.subject?.CN;
  return typeof cn === 'string' ? cn : undefined;
}

export async function startWebhookServer(
  opts: { script?: Reply[]; tls?: { key: string; cert: string; clientCa?: string } } = {},
): Promise<WebhookServer> {
  let script: Reply[] | ((n: number, req: Received) => Reply) = opts.script ?? [];
  let count = 0;
  const requests: Received[] = [];
  const sockets = new Set<Socket>();

  const handler = (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const rec: Received = {
        n: count++,
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        status: 0,
        sni: sniOf(req),
        time: Date.now(),
        clientCn: clientCnOf(req),
      };
      const reply = (typeof script === 'function' ? script(rec.n, rec) : script[rec.n]) ?? {};
      requests.push(rec);
      if (reply.reset) {
        req.socket.destroy();
        return;
      }
      if (reply.hang) return;
      const answer = () => {
        rec.status = reply.status ?? 200;
        res.writeHead(reply.status ?? 200, reply.headers ?? {});
        if (reply.hangBody) res.write('part of a body that never ends');
        else res.end(reply.body ?? 'ok');
      };
      if (reply.delayMs) setTimeout(answer, reply.delayMs);
      else answer();
    });
  };
  const server = opts.tls
    ? createHttps(
        {
          key: opts.tls.key,
          cert: opts.tls.cert,
          // Mutual TLS: a client without a certificate of this CA fails the handshake.
          ...(opts.tls.clientCa ? { ca: opts.tls.clientCa, requestCert: true, rejectUnauthorized: true } : {}),
        },
        handler,
      )
    : createHttp(handler);
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.on('secureConnection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `${opts.tls ? 'https' : 'http'}://127.0.0.1:${port}`,
    port,
    requests,
    delivered: () => requests.filter((r) => r.status >= 200 && r.status < 300),
    script(r) {
      script = r;
    },
    async waitFor(cond, what, timeoutMs = 15_000) {
      await eventually(
        () => cond(requests),
        () => `${what} (got ${requests.length} requests)`,
        {
          timeoutMs,
          everyMs: 20,
        },
      );
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
