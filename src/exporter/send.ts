/**
 * POSTs with undici. One Agent per TLS profile (the four TLS fields, plus the client
 * certificate of mutual TLS) in each runtime's `AgentPool`, never one per message or per
 * exporter, so connections are pooled across exporters that talk alike; a runtime's stop
 * closes its own pool only (two runtimes in one process do not share or close each other's).
 * Every response body is read (by a dispatch handler, no stream) so sockets return to the pool; each attempt has its own
 * header and body timeouts so a hanging server counts as a failed attempt.
 */
import { createHash } from 'node:crypto';
import { checkServerIdentity, createSecureContext, rootCertificates, type PeerCertificate } from 'node:tls';
import { Agent, type Dispatcher } from 'undici';
import type { Target, TlsProfile } from '../resources/webhook/spec.js';
import { errorChainText } from '../lib/error-text.js';

/** The PEM certificate (chain) and key of mutual TLS (`client-certificate`). */
export type ClientCert = { cert: string; key: string };

function connectOptions(p: TlsProfile, client: ClientCert | undefined): Record<string, unknown> {
  const opts: Record<string, unknown> = { rejectUnauthorized: p.verify };
  if (client) {
    opts.cert = client.cert;
    opts.key = client.key;
  }
  // Node's default trust is the root bundle; giving `ca` replaces it, hence the concatenation.
  if (p.ca !== undefined) opts.ca = p.useRootCerts ? [...rootCertificates, p.ca] : [p.ca];
  else if (!p.useRootCerts) opts.ca = [];
  if (p.serverName !== undefined) {
    const name = p.serverName;
    opts.servername = name;
    // The name sent in SNI is also the one the certificate must carry, whatever the URL host.
    opts.checkServerIdentity = (_host: string, cert: PeerCertificate) => checkServerIdentity(name, cert);
  }
  return opts;
}

/**
 * Throws a readable error when the certificate and key do not make a TLS context (not PEM,
 * or a key that does not match the certificate); the key's text is never part of it.
 */
export function checkClientCert(c: ClientCert): void {
  try {
    createSecureContext({ cert: c.cert, key: c.key });
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    throw new Error(
      `client-certificate: the vault value is not a usable PEM certificate and key${typeof code === 'string' ? ` (${code})` : ''}`,
    );
  }
}

/** The Agents of one runtime, by TLS profile, attempt timeout and client certificate. */
export class AgentPool {
  private readonly agents = new Map<string, Agent>();

  /**
   * The attempt timeout lives on the Agent (header and body timeouts), not on each request:
   * per-request timeouts and abort signals cost measurable throughput at max-in-flight 1.
   */
  agentFor(p: TlsProfile, attemptTimeoutMs: number, client?: ClientCert): Agent {
    // The certificate and key are part of the key by their digest only (no secret kept as a map key).
    const cert = client ? createHash('sha256').update(client.cert).update('\0').update(client.key).digest('hex') : null;
    const key = JSON.stringify([p.verify, p.ca ?? null, p.useRootCerts, p.serverName ?? null, attemptTimeoutMs, cert]);
    let agent = this.agents.get(key);
    if (!agent) {
      agent = new Agent({
        connect: connectOptions(p, client),
        keepAliveTimeout: 10_000,
        connections: 128,
        headersTimeout: attemptTimeoutMs,
        bodyTimeout: attemptTimeoutMs,
      });
      this.agents.set(key, agent);
    }
    return agent;
  }

  /** At runtime stop, after the exporters' deadline: POSTs still running are cut. */
  async close(): Promise<void> {
    const all = [...this.agents.values()];
    this.agents.clear();
    await Promise.all(all.map((a) => a.destroy().catch(() => undefined)));
  }
}

export type PostOutcome =
  | { ok: true; status: number }
  | { ok: false; error: string; retryAfter: string | undefined; status?: number; body?: string };

export type PostRequest = {
  target: Target;
  headers: string[];
  body: string;
  agent: Agent;
};

/** A response body is read to this size at most; past it the connection is dropped instead. */
const maxBodyBytes = 1 << 20;

/**
 * One POST's outcome from undici's dispatch events: no response stream is made (`request()`
 * makes a Readable a response, whose body is then dumped: measurably more CPU and more turns of
 * the event loop a POST, which at max-in-flight 1 lie on the path from one POST to the next).
 * A 2xx settles on its status line; a failing response keeps the first 200 bytes of its body
 * (for the attempt log) and settles at its end. Settles once.
 */
class PostHandler implements Dispatcher.DispatchHandler {
  private status = 0;
  private retryAfter: string | undefined;
  /** A failing response: the first 200 bytes of its body. */
  private head: Buffer[] | undefined;
  private headSize = 0;
  private total = 0;
  private settled = false;

  /**
   * `origin` as error texts show it; `hidden`: a host made from a vault value, never shown
   * (`origin` is then `<scheme>://(secret)`).
   */
  constructor(
    private readonly origin: string,
    private readonly resolve: (outcome: PostOutcome) => void,
    private readonly hidden?: string,
  ) {}

  /** Required: a handler without it is taken for one of undici's older interface. */
  onRequestStart(): void {}

  onResponseStart(
    _c: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    // 1xx informational answers come before the real one.
    if (statusCode < 200) return;
    this.status = statusCode;
    // A 2xx is the outcome: decided on the status line, whatever the body does after it (one
    // that never ends would otherwise hold the slot, then fail the delivered message at the
    // body timeout). The body is still read, so the socket goes back to the pool.
    if (statusCode < 300) {
      this.settled = true;
      this.resolve({ ok: true, status: statusCode });
      return;
    }
    this.head = [];
    const ra = headers['retry-after'];
    this.retryAfter = Array.isArray(ra) ? ra[0] : ra;
  }

  onResponseData(c: Dispatcher.DispatchController, chunk: Buffer): void {
    this.total += chunk.length;
    if (this.head && this.headSize < 200) {
      this.head.push(chunk.subarray(0, 200 - this.headSize));
      this.headSize += Math.min(chunk.length, 200 - this.headSize);
    }
    // A huge body is not read to its end: the outcome is known, the connection is dropped.
    if (this.total > maxBodyBytes) {
      this.onResponseEnd();
      c.abort(new Error('response body too large'));
    }
  }

  onResponseEnd(): void {
    if (this.settled) return;
    this.settled = true;
    const { status, origin } = this;
    this.resolve({
      ok: false,
      error: `POST to ${origin} answered HTTP ${status}`,
      retryAfter: this.retryAfter,
      status,
      body: Buffer.concat(this.head ?? []).toString('utf8'),
    });
  }

  onResponseError(_c: Dispatcher.DispatchController, err: Error): void {
    if (this.settled) return;
    this.settled = true;
    const why = this.hidden === undefined ? errorChainText(err) : hideText(errorChainText(err), this.hidden);
    this.resolve({ ok: false, error: `POST to ${this.origin} failed: ${why}`, retryAfter: undefined });
  }
}

/** `text` with every occurrence of `secret` (case aside: hosts are lower-cased) made `(secret)`. */
function hideText(text: string, secret: string): string {
  const lower = text.toLowerCase();
  let out = '';
  let from = 0;
  for (let at = lower.indexOf(secret); at >= 0; at = lower.indexOf(secret, from)) {
    out += text.slice(from, at) + '(secret)';
    from = at + secret.length;
  }
  return out + text.slice(from);
}

/**
 * One attempt. Never throws: network errors, timeouts and non-2xx are outcomes. Only the
 * origin goes into error texts: paths and queries may carry expanded secrets.
 */
export function postOnce(req: PostRequest): Promise<PostOutcome> {
  const { origin, hidden } = req.target;
  return new Promise((resolve) => {
    const handler =
      hidden === undefined
        ? new PostHandler(origin, resolve)
        : new PostHandler(`${origin.slice(0, origin.indexOf('//') + 2)}(secret)`, resolve, hidden);
    try {
      req.agent.dispatch(
        { origin, path: req.target.path, method: 'POST', headers: req.headers, body: req.body },
        handler,
      );
    } catch (err) {
      handler.onResponseError(undefined as never, err instanceof Error ? err : new Error(String(err)));
    }
  });
}
