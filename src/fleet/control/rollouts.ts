/**
 * Staged rollouts at the control plane (CONTRACT §11). An object that carries `rollout`
 * (resources/rollout.ts) reaches the sites wave by wave (the plan and the gate:
 * rollout-plan.ts); sites of later waves keep the previous content meanwhile.
 *
 * Each rollout is one record in the store's kv area (`fleet:rollout:<key>`: in Redis when
 * there is one, so a restarted control plane or another one carries on where it stopped):
 * the ETag and revision of the content it rolls out, the previous content, the waves' sites,
 * the current wave, its state (progressing | paused | done | rolled-back), why, and when the
 * wave started and has been healthy since.
 *
 *   start    the projector (projector.ts) calls `prepare` at every pass: an object whose
 *            content moved past its record starts a new rollout (superseding one in progress).
 *            The previous content is the configuration history's `before` of the revision that
 *            made the current content (store/history.ts); when a rollout was still in progress
 *            (or paused, or rolled back), the content the later waves still run. Without that
 *            revision in the history (CONFIG_HISTORY), the change goes to every site at once.
 *            The waves take the sites that hold the object or get it with the new content.
 *   project  `prepare` answers, per site, the configuration that site must be given: the
 *            current one, or one where the rolled-out objects whose turn has not come at that
 *            site have their previous content (absent when the object is new).
 *   drive    one control-plane process at a time (a lease in the kv area, `fleet:rollout-driver`)
 *            looks at the current wave every `tickMs`: gives its sites the change (a pass of its
 *            projector), then asks the gate with the sites' link (in sync: applied every change
 *            of its log) and last reports; advances, waits, pauses or rolls back. Each write of a
 *            record checks the record's generation first, so a resume or abort from any process
 *            is not undone by a tick that read the record before it.
 *   resume / abort   `POST <state path>/rollout/resume | abort` (rollout-routes.ts).
 *
 * The control plane's own site runs the configuration as written (it has no change log), so it
 * is in no wave.
 */
import { isObject, type JsonObject } from '../../lib/json.js';
import { etagOf } from '../../store/etag.js';
import type { Store } from '../../store/store.js';
import { log } from '../../lib/log.js';
import { errorText } from '../../lib/error-text.js';
import { parseRollout, type RolloutSpec } from '../../resources/rollout.js';
import { siteLabelRecord, siteLabels } from '../../resources/placement.js';
import { site as siteResource } from '../../resources/site.js';
import { webhook } from '../../resources/webhook/index.js';
import type { SiteReport } from '../../api/deps.js';
import { applicableTo, indexView, type ConfigView, type ViewIndex } from './applicable.js';
import { gate, planWaves, type WaveSite } from './rollout-plan.js';

export type RolloutState = 'progressing' | 'paused' | 'done' | 'rolled-back';

export type RolloutRecord = {
  key: string;
  /** The ETag of the content this rollout delivers. */
  etag: string;
  revision: number;
  /** What the sites not yet reached keep (null: they do not have the object). */
  previous: JsonObject | null;
  spec: RolloutSpec;
  waves: string[][];
  /** Index of the current wave. */
  wave: number;
  state: RolloutState;
  reason: string;
  /** When the current wave began (ms): set before its sites are given the change. */
  waveStarted: number;
  projected: boolean;
  healthySince?: number;
  /** Sites that run the change (waves through, plus those of the current wave in sync). */
  updated: number;
  /** Bumped at every write: a write that read an older generation is dropped. */
  gen: number;
};

const recordPrefix = 'fleet:rollout:';
const leaseKey = 'fleet:rollout-driver';

/** One pass of the projector, as `prepare` needs it. */
export type PassView = {
  rev: number;
  view: ConfigView;
  etags: ReadonlyMap<string, string>;
  index: ViewIndex;
  /** The sites of the fleet (without the control plane's own). */
  sites: ReadonlySet<string>;
  /** Whether `site`'s change log holds `key` now. */
  holds(site: string, key: string): Promise<boolean>;
};

/** The configuration a site is to be given: undefined for the pass's own. */
export type SiteViews = (site: string) => { view: ConfigView; index: ViewIndex } | undefined;

export type RolloutsOptions = {
  store: Store;
  root: string;
  /** A site's link: has it applied every change of its log? (presence.ts `fields`' in-sync.) */
  inSync(site: string): Promise<boolean>;
  lastReport(site: string): Promise<SiteReport | undefined>;
  now?: () => number;
  tickMs?: number;
  leaseMs?: number;
};

export type Rollouts = {
  prepare(p: PassView): Promise<SiteViews>;
  /** The `rollout` progress members of the state of the object at `key`, if a rollout of its content exists. */
  state(key: string): Promise<JsonObject | undefined>;
  /** 'none': no rollout of the object's content; 'state': not in a state that allows it. */
  resume(key: string, user: string): Promise<'ok' | 'none' | 'state'>;
  abort(key: string, user: string): Promise<'ok' | 'none' | 'state'>;
  /** Starts driving (with the projector's pass, which resolves when the sites' logs hold the change). */
  start(project: () => Promise<void>): void;
  stop(): Promise<void>;
};

function decode(text: string | undefined): RolloutRecord | undefined {
  if (text === undefined) return undefined;
  try {
    const r = JSON.parse(text) as RolloutRecord;
    return typeof r.etag === 'string' && Array.isArray(r.waves) ? r : undefined;
  } catch {
    return undefined;
  }
}

/** The statuses (and last errors) the site reports of the exporters the object at `key` concerns. */
export function exporterStatuses(report: SiteReport, key: string): NonNullable<WaveSite['report']>['statuses'] {
  const w = webhook.parseKey(key);
  const tenant = w?.tenant ?? key.slice(0, key.indexOf('/'));
  const prefix = webhook.pathOf('x').slice(0, -1);
  const own = w ? webhook.pathOf(w.name!) : undefined;
  const out: NonNullable<WaveSite['report']>['statuses'] = [];
  const items = report.tenants[tenant];
  for (const i of Array.isArray(items) ? items : []) {
    if (!isObject(i) || typeof i.path !== 'string' || !isObject(i.value)) continue;
    if (own ? i.path !== own : !i.path.startsWith(prefix) || i.path.slice(prefix.length).includes('/')) continue;
    const status = typeof i.value.status === 'string' ? i.value.status : 'starting';
    const error = i.value['last-error'];
    out.push({ name: i.path.slice(prefix.length), status, ...(typeof error === 'string' ? { error } : {}) });
  }
  return out;
}

/** What the steps of a rollout share: the options, the clock, the record's reads and writes, the projector's pass. */
type Ctx = {
  o: RolloutsOptions;
  now: () => number;
  load(key: string): Promise<RolloutRecord | undefined>;
  /** Writes `rec` unless the stored record moved past generation `gen`; true when written. */
  save(rec: RolloutRecord, gen: number): Promise<boolean>;
  project(): Promise<void>;
};

/** The revision that made the content at `key` (at or below `upTo`) and the content before it. */
async function madeBy(
  store: Store,
  key: string,
  upTo: number,
): Promise<{ revision: number; before: JsonObject | null } | undefined> {
  let at = upTo;
  for (let page = 0; page < 20; page++) {
    const revs = await store.history({ upTo: at, limit: 100 });
    for (const r of revs) {
      const c = r.changes.find((x) => x.key === key);
      if (c) return { revision: r.revision, before: c.before ?? null };
    }
    if (revs.length < 100) return undefined;
    at = revs[revs.length - 1]!.revision - 1;
  }
  return undefined;
}

async function begin(c: Ctx, p: PassView, key: string, spec: RolloutSpec, old: RolloutRecord | undefined) {
  const etag = p.etags.get(key)!;
  const made = await madeBy(c.o.store, key, p.rev);
  const base = { key, etag, spec, revision: made?.revision ?? p.rev, waveStarted: c.now(), projected: false };
  const done = (reason: string): RolloutRecord => ({
    ...base,
    previous: null,
    waves: [],
    wave: 0,
    state: 'done',
    reason,
    updated: 0,
    gen: old?.gen ?? 0,
  });
  // Sites still on the content before an unfinished rollout keep it: that is the previous
  // content; but after a create (the object was deleted, or is new) the sites had none.
  const previous = made?.before === null ? null : old && old.state !== 'done' ? old.previous : made?.before;
  if (previous === undefined)
    return done(
      'the previous content is not in the configuration history (CONFIG_HISTORY): sent to every site at once',
    );
  const targets: Array<{ name: string; labels: ReturnType<typeof siteLabelRecord> }> = [];
  for (const s of p.sites) {
    if (!applicableTo(p.view, s, c.o.root, p.index).has(key) && !(await p.holds(s, key))) continue;
    targets.push({ name: s, labels: siteLabelRecord(siteLabels(s, p.view.get(siteResource.keyOf(c.o.root, s)))) });
  }
  if (targets.length === 0) return done('the object reaches no site');
  // Back to the content the sites run (a configuration rollback after a rolled-back change): nothing to roll out.
  if (previous !== null && etagOf(previous) === etag)
    return { ...done('the sites run this content already'), waves: [targets.map((t) => t.name).sort()] };
  const waves = planWaves(spec, targets);
  const reason = old && old.state === 'progressing' ? `superseded the rollout of revision ${old.revision}` : '';
  return { ...done(reason), previous, waves, state: 'progressing' as const };
}

/** Starts the rollouts of changed objects; the records of those not done, and the keys of every object with a rollout. */
async function prepare(c: Ctx, p: PassView): Promise<{ active: RolloutRecord[]; keys: string[] }> {
  const active: RolloutRecord[] = [];
  const seen: string[] = [];
  for (const [key, value] of p.view) {
    const spec = parseRollout(value);
    if (!spec || !p.etags.has(key)) continue;
    seen.push(key);
    const stored = await c.load(key);
    let rec: RolloutRecord | undefined = stored;
    if (stored?.etag !== p.etags.get(key)) {
      const next = await begin(c, p, key, spec, stored);
      // Another process began it first: its record (the same plan, from the same revision) holds.
      if (!(await c.save(next, stored?.gen ?? 0))) rec = (await c.load(key)) ?? next;
      else rec = next;
      if (rec === next && next.state === 'progressing')
        log('info', 'fleet: rollout started', { key, revision: next.revision, waves: next.waves.length });
    }
    if (rec && rec.state !== 'done') active.push(await pruneWaves(c, p, rec));
  }
  return { active, keys: seen };
}

/**
 * The record without the sites its object no longer reaches (a site deleted, or one whose
 * labels now place the object elsewhere): a wave never waits for a site that will not get it.
 */
async function pruneWaves(c: Ctx, p: PassView, rec: RolloutRecord): Promise<RolloutRecord> {
  let changed = false;
  const waves: string[][] = [];
  for (const wave of rec.waves) {
    const kept: string[] = [];
    for (const s of wave)
      if (p.sites.has(s) && (applicableTo(p.view, s, c.o.root, p.index).has(rec.key) || (await p.holds(s, rec.key))))
        kept.push(s);
      else changed = true;
    waves.push(kept);
  }
  if (!changed) return rec;
  const next = { ...rec, waves };
  log('info', 'fleet: sites the object no longer reaches leave its rollout', { key: rec.key });
  return (await c.save(next, rec.gen)) ? next : ((await c.load(rec.key)) ?? rec);
}

/** Per site, the configuration it is to be given while `active` rollouts hold some of its objects back. */
function siteViews(p: PassView, active: RolloutRecord[]): SiteViews {
  if (active.length === 0) return () => undefined;
  /** The keys `site` keeps at their previous content. */
  const held = (site: string): RolloutRecord[] =>
    active.filter((r) => r.state === 'rolled-back' || !r.waves.slice(0, r.wave + 1).some((w) => w.includes(site)));
  const views = new Map<string, { view: ConfigView; index: ViewIndex }>();
  return (site) => {
    const recs = held(site);
    if (recs.length === 0) return undefined;
    const id = recs.map((r) => r.key).join('\n');
    let v = views.get(id);
    if (!v) {
      const view = new Map(p.view);
      for (const r of recs)
        if (r.previous) view.set(r.key, r.previous);
        else view.delete(r.key);
      views.set(id, (v = { view, index: indexView(view) }));
    }
    return v;
  };
}

/** What the control plane knows of `site` for the rollout of `key`. */
async function observe(o: RolloutsOptions, key: string, site: string): Promise<WaveSite> {
  const [applied, report] = await Promise.all([o.inSync(site), o.lastReport(site).catch(() => undefined)]);
  if (!report) return { site, applied };
  return { site, applied, report: { at: Date.parse(report.time), statuses: exporterStatuses(report, key) } };
}

/** One look at the current wave of a progressing rollout: give its sites the change, or judge it. */
async function step(c: Ctx, rec: RolloutRecord): Promise<void> {
  const gen = rec.gen;
  if (!rec.projected) {
    // (waveStarted was set before: a site may apply and report before this pass resolves.)
    await c.project();
    await c.save({ ...rec, projected: true }, gen);
    return;
  }
  const wave = rec.waves[rec.wave] ?? [];
  const sites = await Promise.all(wave.map((s) => observe(c.o, rec.key, s)));
  const through = rec.waves.slice(0, rec.wave).reduce((n, w) => n + w.length, 0);
  const g = gate({ spec: rec.spec, now: c.now(), waveStarted: rec.waveStarted, healthySince: rec.healthySince, sites });
  if (g.kind === 'wait') {
    const next = { ...rec, reason: g.reason, updated: through + g.applied, healthySince: g.healthySince };
    if (next.reason !== rec.reason || next.updated !== rec.updated || next.healthySince !== rec.healthySince)
      await c.save(next, gen);
    return;
  }
  if (g.kind === 'fail') {
    const state = rec.spec.onFailure === 'rollback' ? 'rolled-back' : 'paused';
    log('warn', `fleet: rollout ${state} at wave ${rec.wave + 1}`, { key: rec.key, reason: g.reason });
    if (
      await c.save(
        {
          ...rec,
          state,
          reason: g.reason,
          healthySince: undefined,
          updated: state === 'paused' ? through + sites.filter((x) => x.applied).length : 0,
        },
        gen,
      )
    )
      await c.project();
    return;
  }
  const last = rec.wave + 1 >= rec.waves.length;
  const total = rec.waves.reduce((n, w) => n + w.length, 0);
  const next: RolloutRecord = last
    ? { ...rec, state: 'done', reason: '', updated: total, healthySince: undefined }
    : {
        ...rec,
        wave: rec.wave + 1,
        projected: false,
        waveStarted: c.now(),
        reason: '',
        updated: through + wave.length,
        healthySince: undefined,
      };
  if (!(await c.save(next, gen))) return;
  log('info', last ? 'fleet: rollout done' : `fleet: rollout at wave ${next.wave + 1}`, { key: rec.key });
  if (!last) await step(c, next);
}

async function command(
  c: Ctx,
  key: string,
  user: string,
  from: RolloutState[],
  to: RolloutState,
): Promise<'ok' | 'none' | 'state'> {
  const [rec, entry] = await Promise.all([c.load(key), c.o.store.get(key, { fresh: true })]);
  if (!rec || !entry || rec.etag !== entry.etag || rec.waves.length === 0) return 'none';
  if (!from.includes(rec.state)) return 'state';
  const reason = `${to === 'progressing' ? 'resumed' : 'aborted'} by ${user}`;
  // A resumed wave is judged on reports since it started, as before: a site still failing pauses it again.
  const next: RolloutRecord = { ...rec, state: to, reason, healthySince: undefined };
  if (to === 'rolled-back') next.updated = 0;
  if (!(await c.save(next, rec.gen))) return command(c, key, user, from, to);
  await c.project();
  return 'ok';
}

export function createRollouts(o: RolloutsOptions): Rollouts {
  const tickMs = o.tickMs ?? 500;
  const leaseMs = o.leaseMs ?? 3000;
  /** Keys of the objects with a rollout, as the last pass saw them (what the driver looks at). */
  let keys: string[] = [];
  let project: (() => Promise<void>) | undefined;
  let timer: NodeJS.Timeout | undefined;
  let ticking: Promise<void> | undefined;
  let stopped = false;
  let leaseUntil = 0;
  const load = async (key: string) => decode(await o.store.kvGet(recordPrefix + key));
  const c: Ctx = {
    o,
    now: o.now ?? Date.now,
    load,
    async save(rec, gen) {
      const cur = await load(rec.key);
      if (cur && cur.gen !== gen) return false;
      await o.store.kvSet(recordPrefix + rec.key, JSON.stringify({ ...rec, gen: gen + 1 }));
      rec.gen = gen + 1;
      return true;
    },
    project: async () => await project?.(),
  };

  /** Whether the stored records were listed once (at the first pass), for those left by an earlier process. */
  let listed = false;
  /**
   * The records of objects that no longer carry `rollout` (deleted, or the member removed) are
   * dropped: a record left behind made a later create (or a rollout added again) roll out from
   * its stale previous content. At the first pass every stored record is looked at; then those
   * of the last pass.
   */
  async function forget(current: readonly string[]): Promise<void> {
    const now = new Set(current);
    let before: readonly string[] = keys;
    if (!listed) {
      before = (await o.store.kvKeys(recordPrefix).catch(() => [])).map((k) => k.slice(recordPrefix.length));
      listed = true;
    }
    for (const key of before) if (!now.has(key)) await o.store.kvDel(recordPrefix + key).catch(() => undefined);
  }

  /** True while this process holds the driver's lease (taken when free). */
  async function leader(): Promise<boolean> {
    if (c.now() < leaseUntil) return true;
    if ((await o.store.kvIncr(leaseKey, 1, leaseMs)) !== 1) return false;
    leaseUntil = c.now() + leaseMs - Math.min(1000, leaseMs / 3);
    return true;
  }

  async function tick(): Promise<void> {
    if (keys.length === 0 || !(await leader())) return;
    for (const key of keys) {
      if (stopped) return;
      const rec = await load(key);
      if (rec?.state === 'progressing') await step(c, rec);
    }
  }

  return {
    async prepare(p) {
      const got = await prepare(c, p);
      await forget(got.keys);
      keys = got.keys;
      return siteViews(p, got.active);
    },
    async state(key) {
      const [rec, entry] = await Promise.all([load(key), o.store.get(key)]);
      if (!rec || !entry || rec.etag !== entry.etag) return undefined;
      const total = rec.waves.reduce((n, w) => n + w.length, 0);
      return {
        revision: rec.revision,
        wave: Math.min(rec.wave + 1, Math.max(1, rec.waves.length)),
        state: rec.state,
        'sites-updated': rec.state === 'done' ? total : rec.updated,
        'sites-total': total,
        reason: rec.reason,
      };
    },
    resume: (key, user) => command(c, key, user, ['paused'], 'progressing'),
    abort: (key, user) => command(c, key, user, ['progressing', 'paused'], 'rolled-back'),
    start(p) {
      project = p;
      const run = () => {
        if (stopped || ticking) return;
        ticking = tick()
          .catch((err: unknown) => log('warn', 'fleet: a rollout step failed; trying again', { error: errorText(err) }))
          .finally(() => (ticking = undefined));
      };
      timer = setInterval(run, tickMs);
      timer.unref();
    },
    async stop() {
      stopped = true;
      if (timer) clearInterval(timer);
      await ticking;
    },
  };
}
