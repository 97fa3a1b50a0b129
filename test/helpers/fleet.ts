/**
 * Fleet test helpers: an HTTP client for an API process that logs in again when its token
 * stops working (a site's users change when it syncs), how to wait on such processes, and a
 * TCP proxy that a test can cut to take a site off the network. The client's replies are recorded
 * with EDGEPLANE_RECORD_REPLIES=<dir>, to be checked against the OpenAPI document (openapi-check.ts).
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer } from 'node:tls';
import type { EventuallyOptions } from './wait.js';
import { recordRead } from './openapi-check.js';

export type Reply = { status: number; body: unknown; headers: Headers; text: string };

export type Client = {
  url: string;
  token(): Promise<string>;
  call(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Reply>;
};

export function client(url: string, password: string, user = 'admin'): Client {
  let token: string | undefined;
  const login = async (): Promise<string> => {
    const res = await fetch(`${url}/v1/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: user, password }),
    });
    const body = (await res.json()) as { token?: string };
    if (res.status !== 200 || !body.token) throw new Error(`login at ${url}: ${res.status} ${JSON.stringify(body)}`);
    return body.token;
  };
  const c: Client = {
    url,
    token: async () => (token ??= await login()),
    async call(method, path, body, headers = {}) {
      for (let attempt = 0; ; attempt++) {
        const h: Record<string, string> = { authorization: `Bearer ${await c.token()}`, ...headers };
        if (body !== undefined) h['content-type'] = 'application/json';
        const res = await fetch(`${url}${path}`, {
          method,
          headers: h,
          ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        });
        const text = await res.text();
        recordRead({ method, path, status: res.status, contentType: res.headers.get('content-type'), body: text });
        if (res.status === 401 && attempt === 0 && !('authorization' in headers)) {
          token = undefined;
          continue;
        }
        let parsed: unknown = text;
        try {
          parsed = text ? JSON.parse(text) : undefined;
        } catch {
          /* not JSON */
        }
        return { status: res.status, body: parsed, headers: res.headers, text };
      }
    },
  };
  return c;
}

/**
 * How tests wait on API processes that sync, restart or are cut off: checks every 50 ms for up
 * to 20 s, and a check that throws (a process restarting) is tried again.
 */
export const SITE_WAIT: EventuallyOptions = { timeoutMs: 20_000, everyMs: 50, retryErrors: true };

export type TcpProxy = {
  port: number;
  /** Stops accepting and destroys every open connection (the site is cut off). */
  cut(): Promise<void>;
  /** Accepts again on the same port. */
  restore(): Promise<void>;
  close(): Promise<void>;
};

/** A TCP proxy on 127.0.0.1 (a free port unless given) to 127.0.0.1:targetPort. */
export async function startTcpProxy(targetPort: number, port = 0): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  const listen = (p: number) =>
    new Promise<number>((resolve, reject) => {
      const s = createServer((inbound) => {
        const outbound = connect(targetPort, '127.0.0.1');
        sockets.add(inbound).add(outbound);
        const drop = () => {
          inbound.destroy();
          outbound.destroy();
          sockets.delete(inbound);
          sockets.delete(outbound);
        };
        inbound.on('error', drop).on('close', drop);
        outbound.on('error', drop).on('close', drop);
        inbound.pipe(outbound).pipe(inbound);
      });
      s.once('error', reject);
      s.listen(p, '127.0.0.1', () => {
        server = s;
        const addr = s.address();
        resolve(typeof addr === 'object' && addr ? addr.port : p);
      });
    });
  const bound = await listen(port);
  const stop = async () => {
    const s = server;
    server = undefined;
    for (const sock of sockets) sock.destroy();
    sockets.clear();
    if (s) await new Promise<void>((r) => s.close(() => r()));
  };
  return { port: bound, cut: stop, restore: async () => void (await listen(bound)), close: stop };
}

/** A TLS-terminating proxy on 127.0.0.1 (free port) to plain 127.0.0.1:targetPort: HTTPS in front of an API process. */
export async function startTlsProxy(
  targetPort: number,
  tls: { key: string; cert: string },
): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createTlsServer({ key: tls.key, cert: tls.cert }, (inbound) => {
    const outbound = connect(targetPort, '127.0.0.1');
    sockets.add(inbound).add(outbound);
    const drop = () => {
      inbound.destroy();
      outbound.destroy();
    };
    inbound.on('error', drop).on('close', drop);
    outbound.on('error', drop).on('close', drop);
    inbound.pipe(outbound).pipe(inbound);
  });
  server.on('tlsClientError', () => undefined);
  const port = await new Promise<number>((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      const addr = server.address();
      resolve(typeof addr === 'object' && addr ? addr.port : 0);
    }),
  );
  return {
    port,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
