/**
 * An idle site's link (issue #21: idle traffic per site): a bookmark at a version the control
 * plane already has is recorded but not acknowledged again (an idle site sends no request at
 * all), a bookmark that moves the version is; and a stream silent for idleTimeoutMs is taken as
 * a dead link, so the site dials again (three keep-alives at a real site). Against a local HTTP
 * server that scripts the stream; the reconnection wait is injected, so nothing sleeps long.
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ManagedKeys } from '../../src/fleet/site/managed.js';
import { generateSiteKey } from '../../src/secrets/sealed.js';
import { startSiteSync, storeTarget, type SiteSyncOptions } from '../../src/fleet/site/sync-loop.js';
import { openEmbeddedStore } from '../../src/store/embedded.js';
import { tempDir } from '../helpers/backends.js';
import { eventually } from '../helpers/wait.js';
import { setLogLevel } from '../../src/lib/log.js';

setLogLevel('error');

type Script = {
  /** Answer a POST sync 405, as a control plane of a release before acknowledgements in the stream. */
  getOnly?: boolean;
  acks: string[];
  syncs: number;
  stream?: ServerResponse;
  lastEventIds: Array<string | undefined>;
};

async function scriptedControlPlane(s: Script) {
  const server = createServer((req, res) => {
    if (req.url?.includes('/ack?version=')) {
      s.acks.push(decodeURIComponent(req.url.split('version=')[1]!));
      return void res.writeHead(204).end();
    }
    if (s.getOnly && req.method === 'POST') return void res.writeHead(405, { allow: 'GET' }).end();
    s.syncs++;
    // FLEET_ACKS=stream: the sync request is a POST whose body carries the acks, a line each.
    if (req.method === 'POST') {
      req.setEncoding('utf8');
      let rest = '';
      req.on('data', (text: string) => {
        const lines = (rest + text).split('\n');
        rest = lines.pop()!;
        s.acks.push(...lines.filter((l) => l !== ''));
      });
    }
    s.lastEventIds.push(req.headers['last-event-id'] as string | undefined);
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.flushHeaders();
    s.stream = res;
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

/**
 * A site syncing from a control plane scripted by `s` (options of startSiteSync added), its
 * stream open: runs `body`, then stops the site, its store and the control plane.
 */
async function withSite(
  s: Script,
  opts: Partial<SiteSyncOptions>,
  body: (stream: ServerResponse) => Promise<void>,
): Promise<void> {
  const cp = await scriptedControlPlane(s);
  const store = await openEmbeddedStore(tempDir('edgeplane-idle-link-'));
  const sync = startSiteSync({
    url: cp.url,
    site: 'edge-x',
    token: 't',
    target: storeTarget(store, new ManagedKeys()),
    publicKey: () => Promise.resolve(generateSiteKey().publicKey),
    sleep: () => new Promise((r) => setTimeout(r, 10)),
    ...opts,
  });
  try {
    await eventually(() => s.stream !== undefined, 'the site opened its stream', 10_000);
    await body(s.stream!);
  } finally {
    await sync.stop();
    await store.close();
    await cp.close();
  }
}

for (const acks of ['stream', 'post'] as const)
  test(`a bookmark the control plane already has is not acknowledged again; one that moves the version is (acks: ${acks})`, async () => {
    const s: Script = { acks: [], syncs: 0, lastEventIds: [] };
    await withSite(s, { acks }, async (stream) => {
      stream.write('event: change\nid: 5-0\ndata: {"changes": []}\n\n');
      await eventually(() => s.acks.length === 1, 'the change acknowledged', 10_000);
      stream.write('event: bookmark\nid: 5-0\ndata: {"version":"5-0"}\n\n');
      stream.write('event: bookmark\nid: 5-0\ndata: {"version":"5-0"}\n\n');
      stream.write('event: bookmark\nid: 7-0\ndata: {"version":"7-0"}\n\n');
      await eventually(() => s.acks.length >= 2, 'the moved bookmark acknowledged', 10_000);
      // One more bookmark at 7-0 after its ack: still no request.
      stream.write('event: bookmark\nid: 7-0\ndata: {"version":"7-0"}\n\n');
      stream.write('event: change\nid: 8-0\ndata: {"changes": []}\n\n');
      await eventually(() => s.acks.length >= 3, 'the next change acknowledged', 10_000);
      assert.equal(s.acks, ['5-0', '7-0', '8-0']);
      assert.is(s.syncs, 1, 'one stream throughout');
    });
  });

test('a control plane without the POST sync route: the site streams with GET and posts its acks', async () => {
  const s: Script = { getOnly: true, acks: [], syncs: 0, lastEventIds: [] };
  await withSite(s, {}, async (stream) => {
    stream.write('event: change\nid: 5-0\ndata: {"changes": []}\n\n');
    await eventually(() => s.acks.length === 1, 'the change acknowledged by a POST', 10_000);
    assert.equal(s.acks, ['5-0']);
    assert.is(s.syncs, 1, 'one GET stream');
  });
});

test('a stream silent for idleTimeoutMs is a dead link: the site dials again, resuming from what it applied', async () => {
  const s: Script = { acks: [], syncs: 0, lastEventIds: [] };
  await withSite(s, { idleTimeoutMs: 300 }, async (stream) => {
    stream.write('event: change\nid: 5-0\ndata: {"changes": []}\n\n');
    // Then nothing: neither a change nor a bookmark, the connection held open.
    await eventually(() => s.syncs >= 2, 'the site dialled again after the silence', 10_000);
    assert.equal(s.lastEventIds.slice(0, 2), [undefined, '5-0']);
  });
});

test.run();
