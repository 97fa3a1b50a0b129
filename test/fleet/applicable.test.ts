/**
 * applicableTo: exactly what a site receives, for every placement form, and nothing of other
 * sites or of tenants that place nothing there.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { JsonObject } from '../../src/lib/json.js';
import { applicableTo } from '../../src/fleet/control/applicable.js';
import { selectedSites } from '../../src/resources/placement.js';

const hook = (name: string, placement: JsonObject, extra: JsonObject = {}): JsonObject => ({
  name,
  url: 'http://127.0.0.1:1/',
  topics: ['t'],
  'site-placement': placement,
  ...extra,
});

const base: Record<string, JsonObject> = {
  'default/sites/edge-1': { name: 'edge-1', type: 'edge', labels: { region: 'eu', tier: 'gold' } },
  'default/sites/edge-2': {
    name: 'edge-2',
    type: 'edge',
    labels: { region: 'us' },
    hosts: [{ 'host-id': 'h', labels: { gpu: 'yes' } }],
  },
  'default/sites/hq': { name: 'hq', type: 'control-tower' },
  'default/system/settings': { 'default-domain': 'fleet.test' },
  'default/system/dns-zones/z': { name: 'z', domain: 'z.test' },
  'default/system/users/admin': { name: 'admin', 'password-hash': 'x' },
  'default/system/policies/p': { name: 'p', rules: [] },
  'default/applications/app': { name: 'app', version: '1' },
  'default/applications/other-app': { name: 'other-app', version: '1' },
  'default/application-deployments/eu': {
    name: 'eu',
    'application-name': 'app',
    'application-version': '1',
    placement: { 'match-site-labels': 'region = eu' },
  },
  'default/application-deployments/us': {
    name: 'us',
    'application-name': 'other-app',
    'application-version': '1',
    placement: { 'match-site-labels': 'region = us' },
  },
  'default/strongbox/vaults/v': { name: 'v' },
  'default/strongbox/vaults/v/secrets/s': { name: 's', data: { k: 'enc:v1:x' } },
  'default/strongbox/vaults/v/secrets/unused': { name: 'unused', data: { k: 'enc:v1:y' } },
  'default/volga/webhooks/all': hook('all', { 'all-sites': true }),
  'default/volga/webhooks/none': hook('none', { 'all-sites': false }),
  'default/volga/webhooks/listed': hook('listed', { sites: ['edge-1', 'hq'] }),
  'default/volga/webhooks/by-deployment': hook('by-deployment', { 'application-deployments': ['eu', 'us', 'gone'] }),
  'default/volga/webhooks/by-label': hook('by-label', { 'match-site-labels': 'gpu = yes or tier = gold' }),
  'default/volga/webhooks/secretive': hook(
    'secretive',
    { sites: ['edge-2'] },
    { variables: [{ name: 'K', 'value-from-vault-secret': { vault: 'v', secret: 's', key: 'k' } }] },
  ),
  // A subtenant with its own users; one exporter on edge-2 only.
  'default/system/tenants/acme': { name: 'acme' },
  'acme/system/users/ann': { name: 'ann', 'password-hash': 'y' },
  'acme/system/policies/ap': { name: 'ap', rules: [] },
  'acme/system/settings': { 'default-domain': 'acme.test' },
  'acme/volga/webhooks/acme-hook': hook('acme-hook', { sites: ['edge-2'] }),
  // A subtenant placing nothing anywhere: none of it leaves the control plane.
  'default/system/tenants/idle': { name: 'idle' },
  'idle/system/users/ida': { name: 'ida', 'password-hash': 'z' },
};

const view = (extra: Record<string, JsonObject | undefined> = {}) => {
  const m = new Map<string, JsonObject>();
  for (const [k, v] of Object.entries({ ...base, ...extra })) if (v) m.set(k, v);
  return m;
};

const keys = (site: string, extra?: Record<string, JsonObject | undefined>) =>
  [...applicableTo(view(extra), site, 'default').keys()].sort();

const common = [
  'default/system/dns-zones/z',
  'default/system/policies/p',
  'default/system/settings',
  'default/system/users/admin',
];

test("a deployment's selected-sites (GET /v1/state) are the sites that receive it for an exporter", () => {
  const v = view();
  const sites = [...v].filter(([k]) => /^default\/sites\/[^/]+$/.test(k)).map(([, site]) => site);
  for (const name of ['eu', 'us']) {
    const key = `default/application-deployments/${name}`;
    const receiving = sites
      .map((site) => String(site.name))
      .filter((site) => applicableTo(v, site, 'default').has(key));
    assert.equal(selectedSites(v.get(key)!, sites), receiving, name);
    assert.is(receiving.length, 1, name);
  }
  assert.equal(selectedSites({ name: 'bad', placement: { 'match-site-labels': 'region = (' } }, sites), []);
  assert.equal(selectedSites({ name: 'none' }, sites), []);
});

test('edge-1: all-sites, listed, by deployment (region eu) and by label (tier gold)', () => {
  assert.equal(
    keys('edge-1'),
    [
      'default/application-deployments/eu',
      'default/applications/app',
      'default/sites/edge-1',
      ...common,
      'default/volga/webhooks/all',
      'default/volga/webhooks/by-deployment',
      'default/volga/webhooks/by-label',
      'default/volga/webhooks/listed',
    ].sort(),
  );
});

test('edge-2: host labels place by-label; the secret an exporter uses and the owning subtenant come along', () => {
  assert.equal(
    keys('edge-2'),
    [
      'acme/system/policies/ap',
      'acme/system/settings',
      'acme/system/users/ann',
      'acme/volga/webhooks/acme-hook',
      'default/application-deployments/us',
      'default/applications/other-app',
      'default/sites/edge-2',
      'default/strongbox/vaults/v',
      'default/strongbox/vaults/v/secrets/s',
      ...common,
      'default/system/tenants/acme',
      'default/volga/webhooks/all',
      'default/volga/webhooks/by-deployment',
      'default/volga/webhooks/by-label',
      'default/volga/webhooks/secretive',
    ].sort(),
  );
});

test('a site without a site object gets the all-sites exporters and the root basics only', () => {
  assert.equal(keys('nowhere'), [...common, 'default/volga/webhooks/all'].sort());
});

test('a change of site labels, of a deployment or of a list of sites moves exporters', () => {
  const moved = keys('edge-1', {
    'default/sites/edge-1': { name: 'edge-1', labels: { region: 'us' } },
  });
  assert.not.ok(moved.includes('default/volga/webhooks/by-label'), 'tier label gone');
  assert.ok(moved.includes('default/application-deployments/us'));
  assert.not.ok(moved.includes('default/application-deployments/eu'));
  const redeployed = keys('edge-2', {
    'default/application-deployments/us': {
      name: 'us',
      'application-name': 'other-app',
      'application-version': '1',
      placement: { 'match-site-labels': 'region = mars' },
    },
  });
  assert.not.ok(redeployed.includes('default/volga/webhooks/by-deployment'));
  const relisted = keys('edge-2', {
    'default/volga/webhooks/listed': hook('listed', { sites: ['edge-2'] }),
    'default/volga/webhooks/secretive': hook('secretive', { sites: ['edge-1'] }),
  });
  assert.ok(relisted.includes('default/volga/webhooks/listed'));
  assert.not.ok(relisted.includes('default/volga/webhooks/secretive'));
  assert.not.ok(relisted.includes('default/strongbox/vaults/v/secrets/s'), 'the secret leaves with its exporter');
});

test('an invalid label expression places nothing (and does not throw)', () => {
  assert.not.ok(
    keys('edge-1', { 'default/volga/webhooks/by-label': hook('by-label', { 'match-site-labels': 'a = (' }) }).includes(
      'default/volga/webhooks/by-label',
    ),
  );
});

test.run();
