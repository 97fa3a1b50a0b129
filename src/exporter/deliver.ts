/**
 * One message through one exporter: filter, expand, POST with retries. Returns how it was
 * handled; every outcome but `aborted` (the exporter is stopping) lets the message be acked.
 * Problems with the message itself (a variable without value, an invalid URL, data that is
 * not JSON) ignore it and are recorded as the last error; failed POSTs are retried per the
 * policy and then dropped.
 */
import type { Agent } from 'undici';
import { isJsonText } from '../lib/json.js';
import type { Lookup } from '../expand/template.js';
import { log } from '../lib/log.js';
import type { Clock } from '../lib/clock.js';
import type { Message } from './message.js';
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

export function ignore(ctx: DeliverContext, msg: Message, why: string): Outcome | Promise<Outcome> {
  ctx.state.error(`message ${msg.entry.id} of topic ${msg.topic} ignored: ${why}`, ctx.clock.now());
  // Delivery controls: an ignored message goes to the dead-letter topic when one is set.
  const dl = ctx.controls.deadLetter;
  if (!dl) return 'ignored';
  return dl
    .append(msg, { reason: why, attempts: 0, lastStatus: undefined }, ctx.stopping)
    .then((ok) => (ok ? 'ignored' : 'aborted'));
}

/**
 * Where `${NAME}` finds its value while one message is expanded: message variables, then those
 * taken from the message (`expanding.values`, in the order of spec.messageVars; undefined: no
 * value), secrets, system values. One lookup for every message, reading the message being
 * expanded from `expanding`: expansion is synchronous, one message at a time, so no Map and no
 * closure are made per message.
 */
const expanding: {
  ctx: DeliverContext | undefined;
  msg: Message | undefined;
  /** The first `count` are this message's (an array's length set a message is a call into the runtime). */
  values: Array<string | undefined>;
  count: number;
} = { ctx: undefined, msg: undefined, values: [], count: 0 };

const lookup: Lookup = (name) => {
  const ctx = expanding.ctx!;
  const own = expanding.msg!.variable(name);
  if (own !== undefined) return own;
  const vars = ctx.spec.messageVars;
  // The last of a name wins, as it did in a Map filled in order.
  for (let i = expanding.count - 1; i >= 0; i--) {
    const v = expanding.values[i];
    if (v !== undefined && vars[i]!.name === name) return v;
  }
  return ctx.secrets.get(name) ?? ctx.sys.get(name);
};

/** Starts the expansion of `msg`: `lookup` reads it (and its values, `addValue`) until `endExpansion`. */
function beginExpansion(ctx: DeliverContext, msg: Message): void {
  expanding.ctx = ctx;
  expanding.msg = msg;
  expanding.count = 0;
}

/** The value of the next of spec.messageVars (undefined: none). */
function addValue(value: string | undefined): void {
  expanding.values[expanding.count++] = value;
}

/** Lets the expanded message go (its values are overwritten by the next). */
function endExpansion(): void {
  expanding.ctx = undefined;
  expanding.msg = undefined;
  expanding.count = 0;
}

/** oauth2: one POST with the cached access token, fetched again after one 401. */
async function postWithToken(
  ctx: DeliverContext,
  oauth: TokenSource,
  p: Post,
  attempt: number,
  headers: string[],
): Promise<PostOutcome> {
  for (let round = 0; ; round++) {
    const t = await oauth.token();
    if (!t.ok) return { ok: false, error: t.error, retryAfter: undefined };
    const t0 = performance.now();
    const r = await postOnce({
      target: p.target,
      headers: headers.concat('authorization', `Bearer ${t.token}`),
      body: p.body,
      agent: ctx.agent(),
    });
    if (r.ok || r.status !== 401 || round > 0) return r;
    // The POST sent again at once with a new token is a POST of its own: it takes a rate-limit
    // token, and the refused one is counted and logged (a stop meanwhile: post() records it).
    if (ctx.controls.rate && !(await ctx.controls.rate.take(ctx.stopping))) return r;
    recordAttempt(ctx, p, attempt, false, r, performance.now() - t0, true);
    const first = p.messages[0]!;
    const failed = { topic: first.topic, id: first.entry.id, attempt, error: r.error, status: r.status, body: r.body };
    ctx.state.attemptFailed(failed, ctx.clock.now(), false);
    oauth.invalidate(t.token);
  }
}

/**
 * The `ordering-key` of a message: its template expanded with the message's variables. A key
 * that cannot be expanded (a variable without value) is the empty key, only to place the
 * message: its turn comes in topic order among such messages, and deliver() then ignores it as
 * any message with a variable without value (README: give the variable a `default`).
 */
export function orderingKeyOf(ctx: DeliverContext, msg: Message): string {
  const t = ctx.spec.ext.orderingKey;
  if (!t) return '';
  beginExpansion(ctx, msg);
  for (const v of ctx.spec.messageVars) addValue(msg.valueAt(v.pointer) ?? v.fallback);
  const r = t.render(lookup);
  endExpansion();
  return r.ok ? r.value : '';
}

/**
 * A message that failed before (attempt > 1) counted as failing: every way out ends that. One
 * given up at a stop (`aborted`) was not handled: the exporter is not `ready` for it.
 */
function finish<T extends Outcome>(ctx: DeliverContext, attempt: number, outcome: T): T {
  if (attempt > 1) ctx.state.retryEnded(ctx.clock.now(), outcome !== 'aborted');
  return outcome;
}

/** A message expanded and ready to POST: where, with which headers, which body. */
export type Prepared = { target: Target; headers: string[]; data: string };

/** Why a message is ignored without a POST (a variable without value, an invalid URL, data that is not JSON). */
export type Ignore = { ignore: string };

/**
 * Filter and expansion of one message: its POST, or how it was handled without one
 * (filtered, or ignored: a variable without value, an invalid URL, data that is not JSON).
 */
export function prepare(ctx: DeliverContext, msg: Message): Prepared | Outcome | Promise<Outcome> {
  const p = examine(ctx, msg);
  return typeof p === 'object' && 'ignore' in p ? ignore(ctx, msg, p.ignore) : p;
}

/**
 * `prepare` without side effects: nothing recorded, nothing sent, so the dispatcher may run it
 * ahead, while the previous message's POST and ack are still under way (an ignored message is
 * recorded, and sent to the dead-letter topic, only when its turn comes: `ignore`).
 */
export function examine(ctx: DeliverContext, msg: Message): Prepared | 'filtered' | Ignore {
  const { spec } = ctx;
  if (!spec.filter.passAll && !spec.filter.test(msg)) return 'filtered';
  beginExpansion(ctx, msg);
  try {
    return expand(ctx, msg);
  } finally {
    endExpansion();
  }
}

/** examine's expansion of a message that passed the filters (`lookup` reads it). */
/** The target with its host marked hidden when a vault value the URL uses appears in it (case aside). */
function hideSecretHost(target: Target, names: readonly string[], secrets: ReadonlyMap<string, string>): Target {
  // The host name without its port: as a connection error names it (getaddrinfo ENOTFOUND <name>).
  const host = new URL(target.origin).hostname.toLowerCase();
  for (const name of names) {
    const value = secrets.get(name)?.toLowerCase();
    if (value && host.includes(value)) return { ...target, hidden: host };
  }
  return target;
}

function expand(ctx: DeliverContext, msg: Message): Prepared | Ignore {
  const { spec } = ctx;
  // Message variables are resolved once per message, before any template asks for them.
  for (const v of spec.messageVars) {
    const value = msg.valueAt(v.pointer) ?? v.fallback;
    // A variable no template refers to cannot make a message unsendable.
    if (value === undefined && v.used)
      return { ignore: `variable ${v.name}: the JSON pointer finds nothing in MSG and there is no default` };
    addValue(value);
  }

  let target = spec.staticTarget;
  if (!target) {
    const url = spec.url.render(lookup);
    if (!url.ok) return { ignore: `url: ${url.reason}` };
    target = parseTarget(url.value);
    if (!target) return { ignore: 'url: the expanded value is not an absolute http or https URL' };
    if (spec.urlSecrets.length > 0) target = hideSecretHost(target, spec.urlSecrets, ctx.secrets);
  }
  // Without header templates every message has the same headers: one array, never changed
  // (attempts add theirs, signing or a token, to a copy).
  const headers: string[] = spec.headers.length === 0 ? (spec.format === 'json' ? jsonHeaders : textHeaders) : [];
  for (const h of spec.headers) {
    const r = h.value.render(lookup);
    if (!r.ok) return { ignore: `header ${h.name}: ${r.reason}` };
    const bad = badHeaderChar(r.value);
    // Sending it would fail the same way at every attempt: the message is ignored, never retried.
    if (bad !== undefined) return { ignore: `header ${h.name}: the expanded value ${bad}` };
    headers.push(h.name, r.value);
  }
  const data = spec.data.render(lookup);
  if (!data.ok) return { ignore: `data: ${data.reason}` };
  const json = spec.format === 'json';
  // Parsed only when the template cannot tell (data.json: valid for sure, template.ts jsonSlots).
  if (json && data.json !== true && !isJsonText(data.value))
    return { ignore: 'data: the expanded value is not valid JSON (data-format json)' };
  if (spec.headers.length > 0 && !spec.hasContentType) headers.push(...(json ? jsonHeaders : textHeaders));
  return { target, headers, data: data.value };
}

const jsonHeaders = ['content-type', 'application/json'];
const textHeaders = ['content-type', 'text/plain; charset=utf-8'];

export async function deliver(ctx: DeliverContext, msg: Message): Promise<Outcome> {
  const p = prepare(ctx, msg);
  if (typeof p === 'string' || p instanceof Promise) return p;
  return post(ctx, postOf(ctx, msg, p));
}

/** The POST of one prepared message. */
export function postOf(ctx: DeliverContext, msg: Message, p: Prepared): Post {
  const id = ctx.controls.signer ? webhookId(msg.topic, msg.entry.id) : '';
  return { target: p.target, headers: p.headers, body: p.data, id, messages: [msg] };
}

/** One POST of one message or of a batch (batch.ts): the body, and the messages it carries. */
export type Post = {
  target: Target;
  headers: string[];
  body: string;
  /** webhook-id when signing: the same for every attempt. */
  id: string;
  /** In topic order; the first names the attempts and the failures. */
  messages: readonly Message[];
};

const admitNow = { probe: false } as const;

/** Before an attempt: waits for the origin's breaker and a rate-limit token; false when stopping. */
async function admitAttempt(ctx: DeliverContext, origin: string): Promise<{ probe: boolean } | undefined> {
  const { controls } = ctx;
  let probe = false;
  // Delivery controls: an open circuit breaker of this origin holds the attempt back.
  if (!controls.breakers.ready(origin)) {
    const parked = ctx.park();
    const until = controls.breakers.openUntil(origin);
    const ticket = until !== undefined ? ctx.state.attemptScheduled(until) : undefined;
    const admitted = await controls.breakers.admit(origin, ctx.stopping);
    if (ticket !== undefined) ctx.state.attemptDue(ticket);
    if (parked) await ctx.unpark();
    if (admitted === 'stopped') return undefined;
    probe = admitted === 'probe';
  }
  // rate-limit: a token of the site's bucket per attempt (one per POST, a batch's too); while it
  // waits for one, next-attempt-time says when it goes.
  if (controls.rate) {
    let ticket: number | undefined;
    const took = await controls.rate.take(ctx.stopping, (until) => {
      if (ticket !== undefined) ctx.state.attemptDue(ticket);
      ticket = ctx.state.attemptScheduled(until);
    });
    if (ticket !== undefined) ctx.state.attemptDue(ticket);
    if (!took) return undefined;
  }
  return { probe };
}

/** An attempt's headers: the POST's, signed when signing is on (each attempt its own timestamp). */
function attemptHeaders(ctx: DeliverContext, p: Post): string[] {
  const { signer } = ctx.controls;
  return signer ? signer.signed(p.headers, p.id, ctx.clock.now(), p.body) : p.headers;
}

/**
 * One attempt recorded in the attempt log, the breaker and the adaptive limit. post() awaits the
 * POST itself and calls this after: one async function less a message than an async attempt.
 */
function recordAttempt(
  ctx: DeliverContext,
  p: Post,
  attempt: number,
  probe: boolean,
  r: PostOutcome,
  ms: number,
  retryable: boolean,
): void {
  const { controls } = ctx;
  const first = p.messages[0]!;
  controls.attempts.record({
    time: ctx.clock.now(),
    topic: first.topic,
    seqno: first.entry.id,
    attempt,
    status: r.status,
    error: r.ok ? undefined : r.error,
    durationMs: ms,
    body: r.ok ? undefined : r.body,
  });
  // A failure retry-on does not list (the webhook answered, refusing this message) is not the
  // origin failing: it neither opens the breaker nor fails its probe.
  controls.breakers.record(p.target.origin, r.ok || !retryable, r.ok ? undefined : r.error, probe);
  controls.limiter?.done(ms, !r.ok && (r.status === undefined || r.status === 429 || r.status === 503));
}

/** The last attempt failed: every message of the POST goes to the dead-letter topic when one is set. */
async function drop(
  ctx: DeliverContext,
  p: Post,
  attempt: number,
  r: PostOutcome,
  retryable: boolean,
): Promise<Outcome> {
  const first = p.messages[0]!;
  log('warn', 'exporter: message dropped after its last attempt', {
    tenant: ctx.spec.tenant,
    exporter: ctx.spec.name,
    topic: first.topic,
    id: first.entry.id,
    messages: p.messages.length,
    attempts: attempt,
  });
  const dl = ctx.controls.deadLetter;
  if (dl && !r.ok) {
    const reason = retryable ? `tries exhausted: ${r.error}` : `not retried (retry-on): ${r.error}`;
    const info = { reason, attempts: attempt, lastStatus: r.status ?? ('connection' as const) };
    for (const msg of p.messages) if (!(await dl.append(msg, info, ctx.stopping))) return 'aborted';
  }
  return 'dropped';
}

/** POSTs with retries per the policy and `retry-on`; one outcome for every message the POST carries. */
export async function post(ctx: DeliverContext, p: Post): Promise<Outcome> {
  const { spec, controls } = ctx;
  for (let attempt = 1; ; attempt++) {
    if (ctx.stopping.aborted) return finish(ctx, attempt, 'aborted');
    // Nearly always: no open breaker and no rate limit, nothing to wait for.
    const admitted =
      !controls.rate && controls.breakers.ready(p.target.origin) ? admitNow : await admitAttempt(ctx, p.target.origin);
    if (!admitted) return finish(ctx, attempt, 'aborted');
    const headers = attemptHeaders(ctx, p);
    const t0 = performance.now();
    // oauth2: the cached access token, fetched again after one 401 (a failing token endpoint is a failed attempt).
    const r = await (ctx.oauth
      ? postWithToken(ctx, ctx.oauth, p, attempt, headers)
      : postOnce({ target: p.target, headers, body: p.body, agent: ctx.agent() }));
    const retryable = r.ok || !ctx.controls.retryOn || ctx.controls.retryOn(r.status);
    recordAttempt(ctx, p, attempt, admitted.probe, r, performance.now() - t0, retryable);
    if (r.ok) return finish(ctx, attempt, 'delivered');
    const retry = retryable && mayRetry(spec.policy, attempt);
    const first = p.messages[0]!;
    const failed = { topic: first.topic, id: first.entry.id, attempt, error: r.error, status: r.status, body: r.body };
    // A message that will be tried again makes the status `retrying` until it is handled.
    ctx.state.attemptFailed(failed, ctx.clock.now(), attempt === 1 && retry);
    if (!retry) return finish(ctx, attempt, await drop(ctx, p, attempt, r, retryable));
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
