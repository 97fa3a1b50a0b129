/**
 * Configuration history and rollback over HTTP (CONTRACT §11), on both stores: every committed
 * transaction is a revision with who, when and what; a revision's detail shows each object
 * before and after with secret values redacted (and no secret value is in the store's history
 * in clear); rollback restores every object changed after a revision as one new transaction
 * (dry-run and validate change nothing), and is itself undone the same way.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createClient } from 'redis';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { useApi, loginAs } from '../helpers/api.js';
import { forEachBackend } from '../helpers/backends.js';

type Rev = {
  revision: number;
  time: string;
  user: string;
  tenant: string;
  changes: Array<{
    'x-path': string;
    'x-operation': string;
    before?: Record<string, unknown>;
    after?: Record<string, unknown>;
  }>;
};
type ErrorBody = { errors: Array<{ 'error-info': string }> };
const codeOf = (b: unknown) => (b as ErrorBody).errors?.[0]?.['error-info'];

const secretValue = 'history-secret-value-93f1';
const hook = (url: string) => ({
  name: 'w1',
  topics: ['t'],
  'site-placement': { 'all-sites': true },
  url,
  data: '${MSG}',
});

forEachBackend((backend) => {
  const t = suite(`config revisions and rollback (${backend})`);
  const api = useApi(t, backend);
  const revs: Record<string, number> = {};
  const newest = async () => ((await api.json('GET', '/v1/state/config-revisions')).body as Rev[])[0] as Rev;

  t('every commit is a revision: newest first, who, when, what', async () => {
    assert.is(
      (await api.json('PUT', '/v1/config/volga/webhooks/w1', { body: hook('http://127.0.0.1:9/a') })).status,
      201,
    );
    revs.a = (await newest()).revision;
    assert.is(
      (await api.json('PATCH', '/v1/config/volga/webhooks/w1', { body: { url: 'http://127.0.0.1:9/b' } })).status,
      204,
    );
    revs.b = (await newest()).revision;
    const multi = await api.json('PATCH', '/v1/config', {
      body: [
        { 'x-path': '/v1/config/strongbox/vaults/v', name: 'v' },
        { 'x-path': '/v1/config/strongbox/vaults/v/secrets/s', name: 's', data: { k: secretValue } },
      ],
    });
    assert.is(multi.status, 204, JSON.stringify(multi.body));
    revs.c = (await newest()).revision;
    assert.is((await api.json('DELETE', '/v1/config/volga/webhooks/w1')).status, 204);
    revs.d = (await newest()).revision;

    const list = (await api.json('GET', '/v1/state/config-revisions')).body as Rev[];
    const mine = list.filter((r) => r.revision >= revs.a!);
    assert.equal(
      mine.map((r) => [r.revision, r.changes]),
      [
        [revs.d, [{ 'x-path': '/v1/config/volga/webhooks/w1', 'x-operation': 'delete' }]],
        [
          revs.c,
          [
            { 'x-path': '/v1/config/strongbox/vaults/v', 'x-operation': 'create' },
            { 'x-path': '/v1/config/strongbox/vaults/v/secrets/s', 'x-operation': 'create' },
          ],
        ],
        [revs.b, [{ 'x-path': '/v1/config/volga/webhooks/w1', 'x-operation': 'replace' }]],
        [revs.a, [{ 'x-path': '/v1/config/volga/webhooks/w1', 'x-operation': 'create' }]],
      ],
    );
    assert.ok(mine.every((r) => r.user === 'admin' && r.tenant === 'default' && Date.parse(r.time) > 0));
    assert.ok(revs.a! < revs.b! && revs.b! < revs.c! && revs.c! < revs.d!);
    // count, where and fields apply.
    const count = await api.json(
      'GET',
      `/v1/state/config-revisions?count&where=${encodeURIComponent(`revision >= ${revs.b}`)}`,
    );
    assert.equal(count.body, { count: 3 });
    const fields = await api.json(
      'GET',
      `/v1/state/config-revisions?fields=revision,user&where=${encodeURIComponent(`revision = ${revs.a}`)}`,
    );
    assert.equal(fields.body, [{ revision: revs.a, user: 'admin' }]);
    const bad = await api.json('GET', '/v1/state/config-revisions?limit=3');
    assert.is(bad.status, 400);
    // A field a revision does not have is a 400 naming it (it gave [{}, {}, ...]).
    const unknown = await api.json('GET', '/v1/state/config-revisions?fields=bogus');
    assert.is(unknown.status, 400, JSON.stringify(unknown.body));
    assert.is(codeOf(unknown.body), 'unknown-field');
    const nested = await api.json('GET', '/v1/state/config-revisions?fields=changes/x-path&count');
    assert.is(nested.status, 200, JSON.stringify(nested.body));
  });

  t('a revision: before and after per object, secret values redacted and never stored in clear', async () => {
    const b = (await api.json('GET', `/v1/state/config-revisions/${revs.b}`)).body as Rev;
    assert.is(b.changes[0]?.before?.url, 'http://127.0.0.1:9/a');
    assert.is(b.changes[0]?.after?.url, 'http://127.0.0.1:9/b');
    const c = await api.json('GET', `/v1/state/config-revisions/${revs.c}`);
    const text = JSON.stringify(c.body);
    assert.not.ok(text.includes(secretValue), 'the detail shows no secret value');
    const secret = (c.body as Rev).changes.find((x) => x['x-path'].endsWith('/secrets/s'));
    assert.equal(secret?.after?.data, { k: '(secret)' });
    assert.is(secret?.before, undefined);
    const d = (await api.json('GET', `/v1/state/config-revisions/${revs.d}`)).body as Rev;
    assert.ok(d.changes[0]?.before && d.changes[0].after === undefined, 'a delete has only before');
    // Where the history is kept holds no secret value in clear either.
    if (backend === 'redis') {
      const r = createClient({ url: api.settings.redisUrl });
      await r.connect();
      try {
        const entries = await r.xRange('ep:cfg-history', '-', '+');
        assert.ok(entries.length >= 4);
        assert.not.ok(JSON.stringify(entries).includes(secretValue));
      } finally {
        await r.quit();
      }
    } else {
      const aof = readFileSync(join(api.settings.dataDir, 'store.aof'), 'utf8');
      assert.ok(aof.includes('"h":{'), 'revisions are in the append-only file');
      assert.not.ok(aof.includes(secretValue));
    }
    const missing = await api.json('GET', '/v1/state/config-revisions/999999');
    assert.is(missing.status, 404);
    assert.is(codeOf(missing.body), 'unknown-revision');
    const bad = await api.json('GET', '/v1/state/config-revisions/abc');
    assert.is(bad.status, 400);
    assert.equal((bad.body as ErrorBody).errors, [
      {
        'error-message':
          'Cannot use "abc" as a revision in the path /v1/state/config-revisions/abc: give a revision number from GET /v1/state/config-revisions',
        'error-info': 'bad-value',
        'error-details': { path: '/v1/state/config-revisions/abc' },
      },
    ]);
  });

  t('rollback: dry-run and validate change nothing; then one transaction restores revision a', async () => {
    const before = await api.json('GET', '/v1/config');
    const dry = await api.json('POST', '/v1/config/rollback?dry-run', { body: { to: revs.a } });
    assert.is(dry.status, 200, JSON.stringify(dry.body));
    const paths = ((dry.body as { 'impacted-resources': Array<{ path: string }> })['impacted-resources'] ?? []).map(
      (i) => i.path,
    );
    assert.ok(paths.includes('/v1/config/volga/webhooks/w1'), paths.join(' '));
    assert.is((await api.json('POST', '/v1/config/rollback?validate', { body: { to: revs.a } })).status, 204);
    assert.equal((await api.json('GET', '/v1/config')).body, before.body, 'nothing changed');

    const undo = await api.json('POST', '/v1/config/rollback', { body: { to: String(revs.a) } });
    assert.is(undo.status, 200, JSON.stringify(undo.body));
    const r = (undo.body as { revision: number }).revision;
    assert.ok(r > revs.d!);
    const w1 = await api.json('GET', '/v1/config/volga/webhooks/w1');
    assert.is(w1.status, 200);
    assert.is((w1.body as { url: string }).url, 'http://127.0.0.1:9/a');
    assert.is((await api.json('GET', '/v1/config/strongbox/vaults/v')).status, 404);
    const rev = (await api.json('GET', `/v1/state/config-revisions/${r}`)).body as Rev;
    assert.equal(rev.changes.map((c) => [c['x-path'], c['x-operation']]).sort(), [
      ['/v1/config/strongbox/vaults/v', 'delete'],
      ['/v1/config/strongbox/vaults/v/secrets/s', 'delete'],
      ['/v1/config/volga/webhooks/w1', 'create'],
    ]);
    revs.undo = r;
  });

  t('the rollback is undone the same way: the secret comes back with its value', async () => {
    const redo = await api.json('POST', '/v1/config/rollback', { body: { to: revs.undo! - 1 } });
    assert.is(redo.status, 200, JSON.stringify(redo.body));
    assert.is((await api.json('GET', '/v1/config/volga/webhooks/w1')).status, 404);
    const s = await api.json('GET', '/v1/state/strongbox/vaults/v/secrets/s');
    assert.is(s.status, 200, JSON.stringify(s.body));
    assert.equal((s.body as { dict: unknown }).dict, { k: secretValue });
  });

  t('bad rollbacks: 400 for a bad body, 404 for a revision not held; nothing changes', async () => {
    const rev = (await newest()).revision;
    for (const body of [{}, { to: 'abc' }, { to: -1 }, { to: 1, x: 2 }]) {
      const r = await api.json('POST', '/v1/config/rollback', { body });
      assert.is(r.status, 400, JSON.stringify(body));
    }
    const far = await api.json('POST', '/v1/config/rollback', { body: { to: 999999 } });
    assert.is(far.status, 404);
    assert.is(codeOf(far.body), 'unknown-revision');
    assert.is((await api.json('POST', '/v1/config/rollback?dry-run&validate', { body: { to: revs.a } })).status, 400);
    assert.is((await api.json('GET', '/v1/config/rollback')).status, 405);
    assert.is((await newest()).revision, rev, 'no revision was added');
  });

  t("a subtenant sees its own tenant's revisions; an object its parent deleted is a 409 to roll back", async () => {
    assert.is((await api.json('PUT', '/v1/config/system/tenants/acme', { body: { name: 'acme' } })).status, 201);
    const setup = await api.json('PATCH', '/v1/config', {
      body: [
        {
          'x-path': '/v1/config/system/users/eve',
          'x-tenant': 'acme',
          password: 'eve-password-1',
          policies: ['admin'],
        },
      ],
    });
    assert.is(setup.status, 204, JSON.stringify(setup.body));
    const login = await loginAs(api, 'eve@acme', 'eve-password-1');
    const eve = { authorization: `Bearer ${(login.body as { token: string }).token}` };
    assert.is(
      (await api.json('PUT', '/v1/config/applications/shop', { body: { name: 'shop', version: '1.0' }, headers: eve }))
        .status,
      201,
    );
    const mine = (await api.json('GET', '/v1/state/config-revisions', { headers: eve })).body as Rev[];
    const shopRev = mine[0]!;
    assert.equal(shopRev.changes, [{ 'x-path': '/v1/config/applications/shop', 'x-operation': 'create' }]);
    assert.is(shopRev.user, 'eve');
    assert.is(shopRev.tenant, 'acme');
    assert.ok(
      mine.every((r) => r.changes.every((c) => !c['x-path'].includes('/webhooks/'))),
      "the root tenant's changes are not in acme's view",
    );
    const rootView = (await api.json('GET', '/v1/state/config-revisions')).body as Rev[];
    assert.not.ok(
      rootView.some((r) => r.revision === shopRev.revision),
      "and acme's are not in the root's view",
    );
    // The root tenant's administrator deletes acme's application (x-tenant): acme cannot undo that.
    const del = await api.json('PATCH', '/v1/config', {
      body: [{ 'x-path': '/v1/config/applications/shop', 'x-tenant': 'acme', 'x-operation': 'delete' }],
    });
    assert.is(del.status, 204, JSON.stringify(del.body));
    const refused = await api.json('POST', '/v1/config/rollback', { body: { to: shopRev.revision }, headers: eve });
    assert.is(refused.status, 409, JSON.stringify(refused.body));
    assert.is(codeOf(refused.body), 'changed-by-other-tenant');
    assert.is((await api.json('GET', '/v1/config/applications/shop', { headers: eve })).status, 404, 'nothing changed');
  });

  t(
    'a user may roll back only with the history and every changed object readable; a refusal names no object',
    async () => {
      const before = (await newest()).revision;
      // A change a reader of exporters only cannot see: a user.
      const bob = await api.json('PUT', '/v1/config/system/users/bob', {
        body: { name: 'bob', password: 'bob-password-1', policies: ['admin'] },
      });
      assert.is(bob.status, 201, JSON.stringify(bob.body));
      const rules = (paths: string[]) =>
        paths.map((path) => ({ path, operations: ['read', 'create', 'update', 'delete'], effect: 'allow' }));
      const users: Array<[string, string[]]> = [
        ['erin', ['/v1/config/volga/**', '/v1/state/volga/**']],
        ['fred', ['/v1/config/volga/**', '/v1/state/volga/**', '/v1/state/config-revisions']],
      ];
      const auth: Record<string, string> = {};
      for (const [name, paths] of users) {
        const pol = await api.json('PUT', `/v1/config/system/policies/p-${name}`, { body: { rules: rules(paths) } });
        assert.is(pol.status, 201, JSON.stringify(pol.body));
        const u = await api.json('PUT', `/v1/config/system/users/${name}`, {
          body: { password: `${name}-password-1`, policies: [`p-${name}`] },
        });
        assert.is(u.status, 201, JSON.stringify(u.body));
        const login = await api.json('POST', '/v1/login', {
          body: { username: name, password: `${name}-password-1` },
          headers: { authorization: '' },
        });
        auth[name] = `Bearer ${(login.body as { token: string }).token}`;
      }
      for (const name of ['erin', 'fred']) {
        for (const to of [before, 999_999]) {
          const r = await api.json('POST', '/v1/config/rollback?dry-run', {
            body: { to },
            headers: { authorization: auth[name]! },
          });
          assert.is(
            r.status,
            name === 'fred' && to === 999_999 ? 404 : 403,
            `${name} to ${to}: ${JSON.stringify(r.body)}`,
          );
          assert.not.match(JSON.stringify(r.body), /system\/users|bob/, 'no object it may not read is named');
        }
      }
      const fred = await api.json('POST', '/v1/config/rollback?dry-run', {
        body: { to: before },
        headers: { authorization: auth.fred! },
      });
      assert.match(
        JSON.stringify(fred.body),
        /"Cannot roll back to revision \d+: it would change \d+ objects? your policies do not let you read"/,
      );
    },
  );

  t('an export written back unchanged: no impact in its dry-run, no revision, users keep their passwords', async () => {
    const exported = (await api.json('GET', '/v1/config')).body;
    const before = (await newest()).revision;
    const dry = await api.json('PATCH', '/v1/config?dry-run', { body: exported });
    assert.equal(dry.body, { 'impacted-resources': [] });
    const w = await api.json('PATCH', '/v1/config', { body: exported });
    assert.is(w.status, 204, JSON.stringify(w.body));
    assert.is((await newest()).revision, before, 'no revision (users were "replaced" with themselves)');
    const login = await loginAs(api, 'bob', 'bob-password-1');
    assert.is(login.status, 200, 'the password is kept');
  });

  t('a rollback that would delete a tenant still holding objects is a 409 in-use; nothing changes', async () => {
    const before = ((await api.json('GET', '/v1/state/config-revisions')).body as Rev[])[0]!.revision;
    assert.is((await api.json('PUT', '/v1/config/system/tenants/beta', { body: { name: 'beta' } })).status, 201);
    const own = await api.json('PATCH', '/v1/config', {
      body: [{ 'x-path': '/v1/config/applications/b1', 'x-tenant': 'beta', version: '1' }],
    });
    assert.is(own.status, 204, JSON.stringify(own.body));
    // beta's own objects are not in the root tenant's history: the rollback would remove the
    // tenant only, and leave b1 behind, out of every tenant's reach.
    const refused = await api.json('POST', '/v1/config/rollback', { body: { to: before } });
    assert.is(refused.status, 409, JSON.stringify(refused.body));
    assert.is(codeOf(refused.body), 'in-use');
    assert.is((await api.json('GET', '/v1/config/system/tenants/beta')).status, 200, 'nothing changed');
  });

  t.run();
});
