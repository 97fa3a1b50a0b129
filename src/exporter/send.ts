/**
 * POSTs with undici. One Agent per TLS profile (the four TLS fields, plus the client
 * certificate of mutual TLS) in each runtime's `AgentPool`, never one per message or per
 * exporter, so connections are pooled across exporters that talk alike; a runtime's stop
 * closes its own pool only (two runtimes in one process do not share or close each other's).
 * Every response body is dumped so sockets return to the pool; each attempt has its own
 * header and body timeouts so a hanging server counts as a failed attempt.
 */
import { createHash } from 'node:crypto';
import { checkServerIdentity, createSecureContext, rootCertificates, type PeerCertificate } from 'node:tls';
import { Agent } from 'undici';
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

/** The first 200 bytes of a failing response (for the attempt log); the rest is read and dropped. */
async function bodyHead(body: AsyncIterable<Buffer> & { dump(): Promise<void> }): Promise<string> {
  const head: Buffer[] = [];
  let size = 0;
  let total = 0;
  for await (const chunk of body) {
    total += chunk.length;
    if (size < 200) {
      head.push(chunk.subarray(0, 200 - size));
      size += Math.min(chunk.length, 200 - size);
    }
    // A huge error page is not read to its end: the connection is dropped instead.
    if (total > 1 << 20) break;
  }
  return Buffer.concat(head).toString('utf8');
}

/**
 * One attempt. Never throws: network errors, timeouts and non-2xx are outcomes. Only the
 * origin goes into error texts: paths and queries may carry expanded secrets.
 */
export async function postOnce(req: PostRequest): Promise<PostOutcome> {
  try {
    const res = await req.agent.request({
      origin: req.target.origin,
      path: req.target.path,
      method: 'POST',
      headers: req.headers,
      body: req.body,
    });
    if (res.statusCode >= 200 && res.statusCode < 300) {
      await res.body.dump();
      return { ok: true, status: res.statusCode };
    }
    const body = await bodyHead(res.body);
    const ra = res.headers['retry-after'];
    return {
      ok: false,
      error: `POST to ${req.target.origin} answered HTTP ${res.statusCode}`,
      retryAfter: Array.isArray(ra) ? ra[0] : ra,
      status: res.statusCode,
      body,
    };
  } catch (err) {
    return { ok: false, error: `POST to ${req.target.origin} failed: ${errorChainText(err)}`, retryAfter: undefined };
  }
}
