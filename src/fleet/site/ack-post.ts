/**
 * One acknowledgement of the sync loop (sync-loop.ts): `POST <ack url>?version=<v>` with the
 * site token, on a connection of its own that closes after the answer (`connection: close`, as
 * undici's `reset: true` sent it): the control plane then holds one open file per connected
 * site, its stream, not two.
 *
 * A bare HTTP/1.1 request on a socket of `node:net` (`node:tls` for https), the status line read
 * from the answer and the control plane's close awaited, rather than undici's request: undici ends a `connection: close` exchange by
 * destroying the socket with an error object, and Node takes that error's stack (a tenth of a
 * simulated site's CPU when 10,000 sites acknowledged one change in the fleet bench); Node's own
 * `http.request` with `agent: false` costs more still (one change to 2,000 sites: the site
 * processes' CPU 861-944 ms against 549-613 ms with this, two runs each, interleaved). What goes
 * over the wire is the same request. `net.connect` is looked up on the module at each call (as
 * undici does), so a wrapper of it (the bench's, which counts bytes and sets source addresses)
 * still applies.
 */
import net from 'node:net';
import tls from 'node:tls';

export type AckTarget = {
  /** `<control plane>/v1/fleet/sites/<site>/ack` */
  url: URL;
  token: string;
  /** PEM of the CA for an https control plane. */
  ca?: string | undefined;
};

/** How long an acknowledgement may take, connection included; the next one (or the next connection's Last-Event-ID) follows. */
const ackTimeoutMs = 30_000;

/** After the answer, how long the site waits for the control plane to close the connection before it closes it itself. */
const closeWaitMs = 5_000;

const statusLine = /^HTTP\/1\.[01] (\d{3})/;

/** POSTs one acknowledgement; resolves with the control plane's status code, rejects when there is no answer. */
export function postAck(t: AckTarget, version: string): Promise<number> {
  const https = t.url.protocol === 'https:';
  // An IPv6 literal comes in brackets in a URL, not in a connect option.
  const host = t.url.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = Number(t.url.port) || (https ? 443 : 80);
  const path = `${t.url.pathname}?version=${encodeURIComponent(version)}`;
  const request =
    `POST ${path} HTTP/1.1\r\nhost: ${t.url.host}\r\nauthorization: Bearer ${t.token}\r\n` +
    `content-length: 0\r\nconnection: close\r\n\r\n`;
  return new Promise<number>((resolve, reject) => {
    const socket = https
      ? tls.connect({ host, port, ca: t.ca, ...(net.isIP(host) ? {} : { servername: host }) })
      : net.connect({ host, port });
    let head = '';
    let status: number | undefined;
    let settled = false;
    const settle = (err?: Error) => {
      if (settled) return;
      settled = true;
      socket.destroy();
      if (status !== undefined) resolve(status);
      else reject(err ?? new Error('the control plane closed the connection before answering the acknowledgement'));
    };
    socket.setTimeout(ackTimeoutMs, () => settle(new Error('no answer to the acknowledgement in time')));
    socket.once(https ? 'secureConnect' : 'connect', () => socket.write(request));
    socket.on('data', (chunk: Buffer) => {
      if (status !== undefined) return; // the rest of the answer: not needed
      head += chunk.toString('latin1');
      if (head.indexOf('\r\n') < 0 && head.length < 1024) return;
      const m = statusLine.exec(head);
      if (!m) return settle(new Error('not an HTTP answer to the acknowledgement'));
      status = Number(m[1]);
      // The control plane closes first (it answers `connection: close`), so the closed
      // connection's TIME_WAIT is its own (on its one listening port), not the site's: at 10,000
      // sites the sites' binds of new ports searched among tens of thousands of TIME_WAITs.
      socket.setTimeout(closeWaitMs, () => settle());
    });
    socket.once('end', () => settle());
    socket.once('error', (err) => settle(err));
    socket.once('close', () => settle());
  });
}
