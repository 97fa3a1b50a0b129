/** The fleet's view of an exporter (fleet/control/exporter-view.ts), as a pure function of per-site states. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { aggregate, siteRow } from '../../src/fleet/control/exporter-view.js';
import { siteReportWords } from '../../src/lib/exporter-words.js';
import type { JsonObject } from '../../src/lib/json.js';

const state = (status: string, extra: JsonObject = {}): JsonObject => ({
  status,
  delivered: 0,
  dropped: 0,
  ignored: 0,
  filtered: 0,
  'failed-attempts': 0,
  'in-flight': 0,
  'topic-lag': [],
  ...extra,
});
const rowsOf = (states: Array<[string, JsonObject | undefined]>) =>
  states.map(([site, s]) => ({ row: siteRow(site, s, s ? '2026-01-01T00:00:00.000Z' : undefined), state: s }));

test('status: ready only when every site is ready, else the worst', () => {
  const cases: Array<[string[], string]> = [
    [['ready', 'ready'], 'ready'],
    [['ready', 'paused'], 'paused'],
    [['paused', 'starting'], 'starting'],
    [['starting', 'retrying', 'ready'], 'retrying'],
    [['retrying', 'error'], 'error'],
    [['ready', 'stopped'], 'starting'], // a site that has not applied the placement yet
    [['ready', 'bogus'], 'starting'],
  ];
  for (const [statuses, want] of cases) {
    const got = aggregate(rowsOf(statuses.map((s, i) => [`s${i}`, state(s)])));
    assert.is(got.status, want, statuses.join(','));
  }
  assert.is(
    aggregate(
      rowsOf([
        ['a', state('ready')],
        ['b', undefined],
      ]),
    ).status,
    'starting',
    'an unreported site',
  );
});

test('counters are summed, topic-lag per topic, the latest error wins, each site has its row', () => {
  const got = aggregate(
    rowsOf([
      [
        'edge-1',
        state('ready', {
          delivered: 5,
          filtered: 1,
          'in-flight': 1,
          'topic-lag': [{ topic: 't', lag: 2 }],
          'consumed-topics': ['t'],
          'last-error': 'old',
          'last-error-time': '2026-01-01T00:00:00.000Z',
          'start-time': '2026-01-01T00:00:01.000Z',
        }),
      ],
      [
        'edge-2',
        state('retrying', {
          delivered: 3,
          dropped: 2,
          'failed-attempts': 7,
          'topic-lag': [
            { topic: 't', lag: 4 },
            { topic: 'u', lag: 1 },
          ],
          'consumed-topics': ['t', 'u'],
          'last-error': 'HTTP 500',
          'last-error-time': '2026-01-02T00:00:00.000Z',
        }),
      ],
    ]),
  );
  assert.equal(
    {
      status: got.status,
      delivered: got.delivered,
      dropped: got.dropped,
      filtered: got.filtered,
      failed: got['failed-attempts'],
      inFlight: got['in-flight'],
      lag: got['topic-lag'],
      topics: got['consumed-topics'],
      error: got['last-error'],
      start: got['start-time'],
    },
    {
      status: 'retrying',
      delivered: 8,
      dropped: 2,
      filtered: 1,
      failed: 7,
      inFlight: 1,
      lag: [
        { topic: 't', lag: 6 },
        { topic: 'u', lag: 1 },
      ],
      topics: ['t', 'u'],
      error: 'HTTP 500',
      start: '2026-01-01T00:00:01.000Z',
    },
  );
  assert.equal(got.sites, [
    {
      site: 'edge-1',
      status: 'ready',
      delivered: 5,
      dropped: 0,
      ignored: 0,
      filtered: 1,
      'failed-attempts': 0,
      lag: 2,
      'last-error': 'old',
      'last-error-time': '2026-01-01T00:00:00.000Z',
      'reported-at': '2026-01-01T00:00:00.000Z',
      connection: 'connected',
    },
    {
      site: 'edge-2',
      status: 'retrying',
      delivered: 3,
      dropped: 2,
      ignored: 0,
      filtered: 0,
      'failed-attempts': 7,
      lag: 5,
      'last-error': 'HTTP 500',
      'last-error-time': '2026-01-02T00:00:00.000Z',
      'reported-at': '2026-01-01T00:00:00.000Z',
      connection: 'connected',
    },
  ]);
});

test("a site's connection as the site's own state says it: never-connected until it reported", () => {
  assert.is(siteRow('edge-9', undefined, undefined, false).connection, 'never-connected');
  assert.is(siteRow('edge-9', undefined, '2026-01-01T00:00:00.000Z', false).connection, 'disconnected');
  assert.is(siteRow('edge-9', undefined, undefined, true).connection, 'connected');
  // As ctl top and the status page put it.
  assert.is(siteReportWords(siteRow('edge-9', undefined, undefined, false), 0), 'never connected');
});

test.run();
