/**
 * Where an edge site's acknowledgements go (sync-loop.ts): the newest version it applied, in its
 * sync request's own body while a POST stream is up (FLEET_ACKS=stream), else one POST each on a
 * connection of its own (ack-post.ts).
 */
import { Readable } from 'node:stream';
import { postAck, type AckTarget } from './ack-post.js';

/**
 * Acknowledgements: the newest applied version (older ones are skipped). While a stream opened
 * with POST is up, each goes down that request's body as a line (those of one turn of the event
 * loop as one: a catch-up of many entries is one line); otherwise one POST at a time on a
 * connection of its own. An acknowledgement that finds no open stream is left to the next
 * connection, whose Last-Event-ID reports the version the site applied.
 */
export function startAcker(target: AckTarget, isStopped: () => boolean) {
  let ackNext: string | undefined;
  let acking = false;
  /** The version the control plane has recorded as applied (an answered ack, or the Last-Event-ID it took). */
  let acked: string | undefined;
  let ackInFlight: string | undefined;
  /** The open stream's request body, when it carries the acknowledgements. */
  let channel: Readable | undefined;
  let flushing = false;
  /** True when the control plane has `version`, or is being told it. */
  const known = (version: string) => version === acked || version === ackInFlight || version === ackNext;
  const flush = () => {
    flushing = false;
    const v = ackNext;
    ackNext = undefined;
    if (v === undefined || channel === undefined) return;
    if (channel.destroyed) {
      channel = undefined; // the stream ended meanwhile
      return;
    }
    channel.push(`${v}\n`);
    acked = v;
  };
  const post = () => {
    acking = true;
    void (async () => {
      while (ackNext !== undefined && !isStopped()) {
        const v = ackNext;
        ackNext = undefined;
        ackInFlight = v;
        // On a connection of its own, closed after the answer (ack-post.ts): a control plane
        // holds one open file per connected site (its stream), not two.
        await postAck(target, v)
          .then((status) => {
            if (status === 204) acked = v;
          })
          .catch(() => undefined); // the next reconnection reports the version as Last-Event-ID
        ackInFlight = undefined;
      }
      acking = false;
    })();
  };
  const ack = (version: string) => {
    ackNext = version;
    if (channel !== undefined) {
      if (!flushing) {
        flushing = true;
        setImmediate(flush);
      }
    } else if (!acking) post();
  };
  return {
    ack,
    known,
    setAcked: (version: string) => {
      acked = version;
    },
    /** The body of a POST sync request: an empty line at once (undici sends the request with its first chunk), then the acknowledgements. */
    open(): Readable {
      const body = new Readable({ read() {} });
      body.push('\n');
      channel = body;
      body.once('close', () => {
        if (channel === body) channel = undefined;
      });
      return body;
    },
    /** The stream ended: its body ends too. */
    close() {
      const c = channel;
      channel = undefined;
      if (c && !c.destroyed) c.push(null);
    },
  };
}

export type Acker = ReturnType<typeof startAcker>;
