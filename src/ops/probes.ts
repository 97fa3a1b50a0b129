/**
 * Liveness and readiness probes, answered without a token (for load balancers and
 * orchestrators): `GET /healthz` says the process answers; `GET /readyz` runs every
 * readiness check and answers 200 when all pass, 503 otherwise, with each check named in the
 * body: `{"status": "ready"|"not-ready", "checks": [{"name", "ok", "reason"?}]}`.
 *
 * A check is `{name, run}`: `run` resolves to undefined when it passes or to the reason it
 * does not; a check that throws or takes longer than the timeout fails with that reason.
 * More checks (an edge site that has never synced its configuration) are added to the list
 * through `AppDeps.readyChecks`.
 */
import { Hono } from 'hono';
import type { AppDeps, AppEnv, ProbeCheck } from '../api/deps.js';
import { allowRoutes, on } from '../api/routing.js';
import { routes } from '../api/route-table.js';
import { errorText } from '../lib/error-text.js';
import { auditTrailTopic } from '../bus/topics.js';

export type { ProbeCheck };

export type CheckResult = { name: string; ok: boolean; reason?: string };

/** A check slower than this fails (a Redis that does not answer must not hold the probe). */
/** Under a second: an orchestrator's probe (Kubernetes: 1 s by default) gets its answer, not a timeout of its own. */
export const checkTimeoutMs = 800;

const auditTopic = auditTrailTopic;

/** The built-in readiness checks: the store and the bus answer, the secret store is unsealed. */
export function readinessChecks(deps: Pick<AppDeps, 'store' | 'bus' | 'strongbox'>): ProbeCheck[] {
  return [
    {
      name: 'store',
      run: async () => {
        await deps.store.revision();
        return undefined;
      },
    },
    {
      name: 'bus',
      run: async () => {
        await deps.bus.topicInfo(auditTopic);
        return undefined;
      },
    },
    {
      name: 'secret-store',
      run: async () => {
        if (!deps.strongbox.sealed) return undefined;
        return (await deps.strongbox.initialised())
          ? 'the secret store is sealed: POST /v1/strongbox/unseal with the master key'
          : 'the secret store is not initialised: POST /v1/strongbox/init creates its master key (and answers it once)';
      },
    },
  ];
}

async function runOne(check: ProbeCheck, timeoutMs: number): Promise<CheckResult> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<string>((resolve) => {
    timer = setTimeout(() => resolve(`no answer within ${timeoutMs} ms`), timeoutMs);
  });
  try {
    const reason = await Promise.race([Promise.resolve().then(() => check.run()), timeout]);
    return reason === undefined ? { name: check.name, ok: true } : { name: check.name, ok: false, reason };
  } catch (err) {
    return { name: check.name, ok: false, reason: errorText(err) };
  } finally {
    clearTimeout(timer);
  }
}

/** Runs the checks at once; ready when every one passes. */
export async function runChecks(
  checks: readonly ProbeCheck[],
  timeoutMs = checkTimeoutMs,
): Promise<{ ready: boolean; checks: CheckResult[] }> {
  const results = await Promise.all(checks.map((c) => runOne(c, timeoutMs)));
  return { ready: results.every((r) => r.ok), checks: results };
}

const json = (status: number, body: unknown): Response =>
  new Response(JSON.stringify(body), {
    status,
    headers: { 'content-type': 'application/json', 'cache-control': 'no-store' },
  });

export function probeRoutes(deps: AppDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const checks = [...readinessChecks(deps), ...(deps.readyChecks ?? [])];
  const started = Date.now();
  on(app, routes.healthz, () =>
    json(200, {
      status: 'ok',
      checks: [{ name: 'process', ok: true }],
      'uptime-seconds': Math.floor((Date.now() - started) / 1000),
    }),
  );
  on(app, routes.readyz, async () => {
    const r = await runChecks(checks);
    return json(r.ready ? 200 : 503, { status: r.ready ? 'ready' : 'not-ready', checks: r.checks });
  });
  allowRoutes(app);
  return app;
}
