/** `ctl top`'s frame at a control plane: a line per site under a fleet exporter, the rollouts section, and the sites section. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { frame, rolloutsFrame, sitesFrame } from '../../src/cli/top.js';

const exporter = (delivered: [number, number]) => ({
  name: 'eu-hook',
  status: 'retrying',
  delivered: delivered[0] + delivered[1],
  'failed-attempts': 3,
  dropped: 0,
  'topic-lag': [{ topic: 't', lag: 1 }],
  sites: [
    { site: 'edge-1', status: 'ready', delivered: delivered[0], dropped: 0, 'failed-attempts': 0, lag: 0 },
    {
      site: 'edge-2',
      status: 'retrying',
      delivered: delivered[1],
      dropped: 0,
      'failed-attempts': 3,
      lag: 1,
      'last-error': 'HTTP 500 from the webhook',
      'last-error-time': '2026-01-01T00:00:00.000Z',
    },
  ],
});

test('each site of a fleet exporter has its line, with its own delivered/s', () => {
  const t0 = Date.parse('2026-01-01T00:01:00.000Z');
  const first = frame([exporter([10, 0])], new Map(), t0, 500);
  const second = frame([exporter([20, 0])], first.samples, t0 + 1000, 500);
  const lines = second.text.split('\n');
  const e1 = lines.find((l) => l.includes('@edge-1')) ?? '';
  const e2 = lines.find((l) => l.includes('@edge-2')) ?? '';
  assert.match(e1, /ready\s+20\s+10\.0\s+0/);
  assert.match(e2, /retrying\s+0\s+0\.0\s+1/);
  assert.match(e2, /HTTP 500 from the webhook/);
  assert.ok(lines.findIndex((l) => l.startsWith('eu-hook')) < lines.findIndex((l) => l.includes('@edge-1')));
});

test("a site cut off: its line says so, with its last report's time (the line is not live)", () => {
  const t0 = Date.parse('2026-01-01T00:01:00.000Z');
  const e = exporter([1, 0]);
  e.sites[0] = { ...e.sites[0]!, connection: 'disconnected', 'reported-at': '2026-01-01T00:00:30.000Z' } as never;
  const lines = frame([e], new Map(), t0, 500).text.split('\n');
  const e1 = lines.find((l) => l.includes('@edge-1')) ?? '';
  assert.match(e1, /ready .*disconnected, reported 00:00:30 \(30 s ago\)/);
  assert.not.match(lines.find((l) => l.includes('@edge-2')) ?? '', /disconnected/);
});

test('the sites section: connection, in-sync and the exporters each site runs', () => {
  const text = sitesFrame(
    [
      { name: 'edge-1', connection: 'connected', 'in-sync': true },
      { name: 'edge-2', connection: 'disconnected', 'in-sync': false },
      { name: 'edge-3', connection: 'never-connected', 'in-sync': false },
      { name: 'local' }, // a site object without a link (this process's own): not listed
    ],
    [exporter([1, 0])],
  );
  const lines = text.trim().split('\n');
  assert.match(lines[0] ?? '', /^SITE\s+CONNECTION\s+IN-SYNC\s+EXPORTERS/);
  assert.match(lines[1] ?? '', /^edge-1\s+connected\s+yes\s+eu-hook \(ready\)/);
  assert.match(lines[2] ?? '', /^edge-2\s+disconnected\s+no\s+eu-hook \(retrying\)/);
  assert.match(lines[3] ?? '', /^edge-3\s+never-connected\s+no\s+-/);
  assert.is(lines.length, 4);
  assert.is(sitesFrame([], []), '');
});

test('the rollouts section lists each exporter with a staged rollout: state, wave, sites, reason', () => {
  const waves = [{ 'match-site-labels': 'ring = canary' }, { percent: 50 }];
  const text = rolloutsFrame([
    {
      ...exporter([1, 0]),
      rollout: {
        waves,
        'healthy-for': '5s',
        revision: 7,
        wave: 1,
        state: 'paused',
        'sites-updated': 1,
        'sites-total': 3,
        reason: 'site edge-1 reports exporter eu-hook retrying: POST to http://x answered HTTP 500',
      },
    },
    {
      name: 'done-hook',
      rollout: { waves, revision: 5, wave: 2, state: 'done', 'sites-updated': 3, 'sites-total': 3, reason: '' },
    },
    // At a site (or a spec without progress): no state, not listed.
    { name: 'site-view', rollout: { waves } },
    { name: 'plain', status: 'ready' },
  ]);
  const lines = text.trim().split('\n');
  assert.is(lines.length, 3, text);
  assert.match(lines[0] ?? '', /^ROLLOUT\s+REVISION\s+STATE\s+WAVE\s+SITES\s+REASON$/);
  assert.match(lines[1] ?? '', /^eu-hook\s+7\s+paused\s+1\s+1 of 3\s+site edge-1 reports exporter eu-hook retrying/);
  assert.match(lines[2] ?? '', /^done-hook\s+5\s+done\s+2\s+3 of 3\s+-$/);
  assert.is(rolloutsFrame([{ name: 'plain', status: 'ready' }]), '');
});

test.run();
