/**
 * One message through one exporter: filter, expand, POST with retries. Returns how it was
 * handled; every outcome but `aborted` (the exporter is stopping) lets the message be acked.
 * Problems with the message itself (a variable without value, an invalid URL, data that is
 * not JSON) ignore it and are recorded as the last error; failed POSTs are retried per the
 * policy and then dropped.
 */
import type { Agent } from 'undici';
import { log } from '../lib/log.js';
import type { Clock } from '../lib/clock.js';
import type { Message } from './message.js';
import { resolvePointer } from './message.js';
import { mayRetry, nextDelayMs, retryAfterMs } from './retry.js';
import { postOnce, type PostOutcome } from './send.js';
import type { TokenSource } from './oauth2.js';
import { minRetryMs, parseTarget, type ExporterSpec, type Target } from '../resources/webhook/spec.js';
import type { ExporterState } from './state.js';
import type { RunControls } from './controls.js';
import { webhookId } from './signing.js';
import { badHeaderChar } from '../resources/webhook/header-value.js';

export type Outcome = 'delivered' | 'dropped' | 'ignored' | 'filtered' | 'aborted';

export type DeliverContext = {
  spec: ExporterSpec;
  /** The Agent of the next attempt (mutual TLS: the client certificate held now). */
  agent: () => Agent;
  clock: Clock;
  /** SYS_* variables of this site and tenant. */
  sys: ReadonlyMap<string, string>;
  /** Declared secret variables, read at exporter start. */
  secrets: ReadonlyMap<string, string>;
  state: ExporterState;
  /** Aborted when the exporter stops: no new attempt, no further waiting. */
  stopping: AbortSignal;
  /** Delivery controls (controls.ts). */
  controls: RunControls;
  /** oauth2: the access tokens of this exporter. */
  oauth?: TokenSource | undefined;
  /** Before waiting for an open circuit breaker: the exporter frees the slot (false: it keeps it). */
  park(): boolean;
  /** After that wait: takes a slot again. */
  unpark(): Promise<void>;
};

function ignore(ctx: DeliverContext, msg: Message, why: string): Outcome | Promise<Outcome> {
  ctx.state.error(`message ${msg.entry.id} of topic ${msg.topic} ignored: ${why}`, ctx.clock.now());
  // Delivery controls: an ignored message goes to the dead-letter topic when one is set.
  const dl = ctx.controls.deadLetter;
  if (!dl) return 'ignored';
  return dl
    .append(msg, { reason: why, attempts: 0, lastStatus: undefined }, ctx.stopping)
    .then((ok) => (ok ? 'ignored' : 'aborted'));
}

/**
 * Where `${NAME}` finds its value: message variables, then those taken from the message,
 * secrets, system values. Made by a function rather than declared in deliver: a named
 * closure per message costs a naming call under tsx/esbuild keepNames.
 */
function lookupIn(
  ctx: DeliverContext,
  msg: Message,
  fromMessage: Map<string, string> | undefined,
): (name: string) => string | undefined {
  return (name) => msg.variable(name) ?? fromMessage?.get(name) ?? ctx.secrets.get(name) ?? ctx.sys.get(name);
}

/**
 * The `ordering-key` of a message: its template expanded with the message's variables. A key
 * that cannot be expanded (a variable without value) is the empty key: such messages keep
 * their topic order among themselves, and deliver() then deals with the variable as usual.
 */
async function postWithToken(
  ctx: DeliverContext,
  oauth: TokenSource,
  target: Target,
  headers: string[],
  body: string,
): Promise<PostOutcome> {
  for (let round = 0; ; round++) {
    const t = await oauth.token();
    if (!t.ok) return { ok: false, error: t.error, retryAfter: undefined };
    const r = await postOnce({
      target,
      headers: headers.concat('authorization', `Bearer ${t.token}`),
      body,
      agent: ctx.agent(),
    });
    if (r.ok || r.status !== 401 || round > 0) return r;
    oauth.invalidate(t.token);
  }
}

export function orderingKeyOf(ctx: DeliverContext, msg: Message): string {
  const t = ctx.spec.ext.orderingKey;
  if (!t) return '';
  let fromMessage: Map<string, string> | undefined;
  for (const v of ctx.spec.messageVars) {
    const value = resolvePointer(msg.object, v.pointer) ?? v.fallback;
    if (value !== undefined) (fromMessage ??= new Map()).set(v.name, value);
  }
  const r = t.render(lookupIn(ctx, msg, fromMessage));
  return r.ok ? r.value : '';
}

/** A message that failed before (attempt > 1) counted as failing: every way out ends that. */
function finish<T extends Outcome>(ctx: DeliverContext, attempt: number, outcome: T): T {
  if (attempt > 1) ctx.state.retryEnded(ctx.clock.now());
  return outcome;
}

export async function deliver(ctx: DeliverContext, msg: Message): Promise<Outcome> {
  const { spec } = ctx;
  if (!spec.filter.passAll && !spec.filter.test(msg.text)) return 'filtered';

  // Message variables are resolved once per message, before any template asks for them.
  let fromMessage: Map<string, string> | undefined;
  for (const v of spec.messageVars) {
    const value = resolvePointer(msg.object, v.pointer) ?? v.fallback;
    if (value === undefined)
      return ignore(ctx, msg, `variable ${v.name}: the JSON pointer finds nothing in MSG and there is no default`);
    (fromMessage ??= new Map()).set(v.name, value);
  }
  const lookup = lookupIn(ctx, msg, fromMessage);

  let target = spec.staticTarget;
  if (!target) {
    const url = spec.url.render(lookup);
    if (!url.ok) return ignore(ctx, msg, `url: ${url.reason}`);
    target = parseTarget(url.value);
    if (!target) return ignore(ctx, msg, 'url: the expanded value is not an absolute http or https URL');
  }
  const headers: string[] = [];
  for (const h of spec.headers) {
    const r = h.value.render(lookup);
    if (!r.ok) return ignore(ctx, msg, `header ${h.name}: ${r.reason}`);
    const bad = badHeaderChar(r.value);
    // Sending it would fail the same way at every attempt: the message is ignored, never retried.
    if (bad !== undefined) return ignore(ctx, msg, `header ${h.name}: the expanded value ${bad}`);
    headers.push(h.name, r.value);
  }
  const data = spec.data.render(lookup);
  if (!data.ok) return ignore(ctx, msg, `data: ${data.reason}`);
  if (spec.format === 'json') {
    try {
      JSON.parse(data.value);
    } catch {
      return ignore(ctx, msg, 'data: the expanded value is not valid JSON (data-format json)');
    }
    if (!spec.hasContentType) headers.push('content-type', 'application/json');
  } else if (!spec.hasContentType) {
    headers.push('content-type', 'text/plain; charset=utf-8');
  }

  const { controls } = ctx;
  const id = controls.signer ? webhookId(msg.topic, msg.entry.id) : '';
  for (let attempt = 1; ; attempt++) {
    if (ctx.stopping.aborted) return finish(ctx, attempt, 'aborted');
    // Delivery controls: an open circuit breaker of this origin holds the attempt back.
    let probe = false;
    if (!controls.breakers.ready(target.origin)) {
      const parked = ctx.park();
      const until = controls.breakers.openUntil(target.origin);
      const ticket = until !== undefined ? ctx.state.attemptScheduled(until) : undefined;
      const admitted = await controls.breakers.admit(target.origin, ctx.stopping);
      if (ticket !== undefined) ctx.state.attemptDue(ticket);
      if (parked) await ctx.unpark();
      if (admitted === 'stopped') return finish(ctx, attempt, 'aborted');
      probe = admitted === 'probe';
    }
    // rate-limit: a token of the site's bucket per attempt.
    if (controls.rate && !(await controls.rate.take(ctx.stopping))) return finish(ctx, attempt, 'aborted');
    const signed = controls.signer ? headers.concat(controls.signer.headers(id, ctx.clock.now(), data.value)) : headers;
    const t0 = performance.now();
    let r: PostOutcome;
    if (ctx.oauth) {
      // oauth2: the cached access token, fetched again after one 401 (a failing token endpoint is a failed attempt).
      r = await postWithToken(ctx, ctx.oauth, target, signed, data.value);
    } else r = await postOnce({ target, headers: signed, body: data.value, agent: ctx.agent() });
    const ms = performance.now() - t0;
    controls.attempts.record({
      time: ctx.clock.now(),
      topic: msg.topic,
      seqno: msg.entry.id,
      attempt,
      status: r.status,
      error: r.ok ? undefined : r.error,
      durationMs: ms,
      body: r.ok ? undefined : r.body,
    });
    controls.breakers.record(target.origin, r.ok, r.ok ? undefined : r.error, probe);
    controls.limiter?.done(ms, !r.ok && (r.status === undefined || r.status === 429 || r.status === 503));
    if (r.ok) return finish(ctx, attempt, 'delivered');
    const retryable = controls.retryOn ? controls.retryOn(r.status) : true;
    const retry = retryable && mayRetry(spec.policy, attempt);
    const failed = { topic: msg.topic, id: msg.entry.id, attempt, error: r.error, status: r.status, body: r.body };
    // A message that will be tried again makes the status `retrying` until it is handled.
    ctx.state.attemptFailed(failed, ctx.clock.now(), attempt === 1 && retry);
    if (!retry) {
      log('warn', 'exporter: message dropped after its last attempt', {
        tenant: spec.tenant,
        exporter: spec.name,
        topic: msg.topic,
        id: msg.entry.id,
        attempts: attempt,
      });
      // Delivery controls: a dropped message goes to the dead-letter topic when one is set.
      const dl = controls.deadLetter;
      if (dl) {
        const reason = retryable ? `tries exhausted: ${r.error}` : `not retried (retry-on): ${r.error}`;
        const info = { reason, attempts: attempt, lastStatus: r.status ?? ('connection' as const) };
        if (!(await dl.append(msg, info, ctx.stopping))) return finish(ctx, attempt, 'aborted');
      }
      return finish(ctx, attempt, 'dropped');
    }
    // Never a busy loop, whatever Retry-After says.
    const wait = Math.max(minRetryMs, nextDelayMs(spec.policy, attempt, retryAfterMs(r.retryAfter, ctx.clock.now())));
    const ticket = ctx.state.attemptScheduled(ctx.clock.now() + wait);
    try {
      await ctx.clock.sleep(wait, ctx.stopping);
    } finally {
      ctx.state.attemptDue(ticket);
    }
  }
}
