/**
 * Error rendering in one place (api/render-error.ts): a fault that is not an ApiError is logged
 * with its cause and answered 500 `internal` without internals, by the app and by the inner app
 * that answers a control plane's forwarded read at a site (site-reads.ts `createLocalReader`,
 * which rendered its own body and dropped the log line).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startApi, type TestApi } from '../helpers/api.js';
import { createLocalReader } from '../../src/api/site-reads.js';
import { setLogLevel } from '../../src/lib/log.js';
import type { Store } from '../../src/store/store.js';
import { wireErrors } from '../helpers/assert.js';

let api: TestApi;

test.before(async () => {
  api = await startApi('embedded');
});

test.after(async () => {
  await api.close();
});

/** A store whose every method throws a plain Error: a fault of ours, not of the request. */
function brokenStore(store: Store): Store {
  return new Proxy(store, {
    get(target, prop, receiver) {
      const v: unknown = Reflect.get(target, prop, receiver);
      if (typeof v !== 'function') return v;
      return () => {
        throw new TypeError('store exploded in a test');
      };
    },
  });
}

/** Runs `fn` with stdout captured; returns the JSON log lines written meanwhile. */
async function logLines(fn: () => Promise<void>): Promise<Array<Record<string, unknown>>> {
  const write = process.stdout.write.bind(process.stdout);
  let out = '';
  process.stdout.write = ((chunk: string | Uint8Array) => {
    out += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString();
    return true;
  }) as typeof process.stdout.write;
  setLogLevel('info');
  try {
    await fn();
  } finally {
    process.stdout.write = write;
    setLogLevel('error');
  }
  return out
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

test('a forwarded site read that fails inside: 500 internal, and the cause is logged', async () => {
  const deps = api.instance.deps;
  const read = createLocalReader({ ...deps, store: brokenStore(deps.store) });
  let answer: Awaited<ReturnType<typeof read>> | undefined;
  const lines = await logLines(async () => {
    answer = await read({ tenant: deps.settings.tenant, path: '/v1/state/sites', query: '' });
  });
  assert.is(answer?.status, 500);
  const [e] = wireErrors(answer?.body);
  assert.is(e?.['error-info'], 'internal');
  assert.not.match(JSON.stringify(answer?.body), /exploded/); // no internals in the reply
  const logged = lines.find((l) => l.level === 'error' && String(l.error).includes('store exploded in a test'));
  assert.ok(logged, `no log line for the fault: ${JSON.stringify(lines)}`);
  assert.is(logged?.path, '/v1/state/sites');
});

test.run();
