/**
 * dry-run and validate (issue 3, items 4 and 5) on /v1/config and on every single-resource
 * write, on the embedded store and on Redis (DB 13). dry-run lists exactly the fields that
 * would change (values written as strings, see model/diff.ts) and then the dependents of a
 * changed object; validate answers 204 or one 400 listing every problem. Neither changes
 * anything: GET /v1/config?send-etag=true is compared before and after.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startApi, type TestApi } from '../helpers/api.js';
import { forEachBackend } from '../helpers/backends.js';
import { problemOf, wireErrors } from '../helpers/assert.js';

const C = '/v1/config';
const hook = (name: string, extra: Record<string, unknown>) => ({
  'x-path': `${C}/volga/webhooks/${name}`,
  topics: ['t'],
  url: 'http://example.test/x',
  data: 'd',
  'site-placement': { 'all-sites': true },
  ...extra,
});
const secretVar = (secret: string) => [{ name: 'V', 'value-from-vault-secret': { vault: 'v1', secret, key: 'k' } }];

const seedBody = [
  { 'x-path': `${C}/applications/a1`, version: '1' },
  { 'x-path': `${C}/applications/a2`, version: '1' },
  { 'x-path': `${C}/application-deployments/d1`, 'application-name': 'a1' },
  { 'x-path': `${C}/application-deployments/d2`, 'application-name': 'a2' },
  { 'x-path': `${C}/sites/s1`, labels: { zone: 'x' }, 'management-ipv4-access-list': ['10.0.0.0/8'] },
  { 'x-path': `${C}/strongbox/vaults/v1` },
  { 'x-path': `${C}/strongbox/vaults/v1/secrets/s1`, data: { k: 'first-plaintext' } },
  { 'x-path': `${C}/strongbox/vaults/v1/secrets/s2`, data: { k: 'other-plaintext' } },
  hook('w-sec', { variables: secretVar('s1'), url: 'http://example.test/${V}' }),
  hook('w-s2', { variables: secretVar('s2'), url: 'http://example.test/${V}' }),
  hook('w-dep', { 'site-placement': { 'application-deployments': ['d1'] } }),
  hook('w-none', {}),
];

type Impacted = { path: string; fields: Array<{ field: string; added: string[]; deleted: string[] }> };

async function snapshot(api: TestApi): Promise<unknown> {
  const r = await api.json('GET', `${C}?send-etag=true`);
  assert.is(r.status, 200);
  return r.body;
}

async function dryRun(api: TestApi, body: unknown[]): Promise<Impacted[]> {
  const r = await api.json('PATCH', `${C}?dry-run`, { body });
  assert.is(r.status, 200, JSON.stringify(r.body));
  return (r.body as { 'impacted-resources': Impacted[] })['impacted-resources'];
}

const infos = (body: unknown) => wireErrors(body).map(problemOf);

forEachBackend((backend) => {
  const t = (name: string, fn: (api: TestApi) => Promise<void>) =>
    test(`${backend}: ${name}`, async () => {
      const api = await startApi(backend, { db: 13 });
      try {
        const r = await api.json('PATCH', C, { body: seedBody });
        assert.is(r.status, 204, JSON.stringify(r.body));
        const before = await snapshot(api);
        await fn(api);
        assert.equal(await snapshot(api), before, 'dry-run and validate changed nothing');
      } finally {
        await api.close();
      }
    });

  t(
    'dry-run: changed fields exactly, then a deployment of a changed application and the webhook it places',
    async (api) => {
      assert.equal(
        await dryRun(api, [
          { 'x-path': `${C}/applications/a1`, 'x-operation': 'update', version: '2', description: 'new' },
        ]),
        [
          {
            path: `${C}/applications/a1`,
            fields: [
              { field: 'description', added: ['new'], deleted: [] },
              { field: 'version', added: ['2'], deleted: ['1'] },
            ],
          },
          { path: `${C}/application-deployments/d1`, fields: [] },
          { path: `${C}/volga/webhooks/w-dep`, fields: [] },
        ],
      );
    },
  );

  t('dry-run: a changed secret lists the webhook that reads it, never the value', async (api) => {
    const r = await api.json('PATCH', `${C}?dry-run`, {
      body: [
        {
          'x-path': `${C}/strongbox/vaults/v1/secrets/s1`,
          'x-operation': 'update',
          data: { k: 'second-plaintext', j: 'third-plaintext' },
        },
      ],
    });
    assert.is(r.status, 200);
    assert.not.match(JSON.stringify(r.body), /plaintext/);
    assert.equal((r.body as { 'impacted-resources': Impacted[] })['impacted-resources'], [
      {
        path: `${C}/strongbox/vaults/v1/secrets/s1`,
        fields: [
          { field: 'data/j', added: ['(secret)'], deleted: [] },
          { field: 'data/k', added: ['(secret)'], deleted: ['(secret)'] },
        ],
      },
      { path: `${C}/volga/webhooks/w-sec`, fields: [] },
    ]);
    // Writing back the redacted value is no change at all.
    assert.equal(await dryRun(api, [{ 'x-path': `${C}/strongbox/vaults/v1/secrets/s1`, data: { k: '(secret)' } }]), []);
  });

  t('dry-run: a changed vault lists every webhook reading one of its secrets', async (api) => {
    const out = await dryRun(api, [
      { 'x-path': `${C}/strongbox/vaults/v1`, 'x-operation': 'update', description: 'keys' },
    ]);
    assert.equal(
      out.map((i) => i.path),
      [`${C}/strongbox/vaults/v1`, `${C}/volga/webhooks/w-s2`, `${C}/volga/webhooks/w-sec`],
    );
  });

  t(
    'dry-run: deleting a deployment deletes every leaf and lists the webhook it places; a dependent also changed is listed once',
    async (api) => {
      assert.equal(await dryRun(api, [{ 'x-path': `${C}/application-deployments/d1`, 'x-operation': 'delete' }]), [
        {
          path: `${C}/application-deployments/d1`,
          fields: [
            { field: 'application-name', added: [], deleted: ['a1'] },
            { field: 'name', added: [], deleted: ['d1'] },
          ],
        },
        { path: `${C}/volga/webhooks/w-dep`, fields: [] },
      ]);
      const both = await dryRun(api, [
        { 'x-path': `${C}/applications/a1`, 'x-operation': 'update', version: '3' },
        { 'x-path': `${C}/volga/webhooks/w-dep`, 'x-operation': 'update', data: 'e' },
      ]);
      assert.equal(
        both.map((i) => i.path),
        [`${C}/applications/a1`, `${C}/volga/webhooks/w-dep`, `${C}/application-deployments/d1`],
      );
      assert.equal(both[1]?.fields, [{ field: 'data', added: ['e'], deleted: ['d'] }]);
    },
  );

  t(
    'dry-run: ordered lists by position, maps by key, creation adds every leaf, an identical replace changes nothing',
    async (api) => {
      assert.equal(
        await dryRun(api, [
          {
            'x-path': `${C}/sites/s1`,
            'x-operation': 'update',
            labels: { zone: 'y', tier: 'edge' },
            'management-ipv4-access-list': ['10.0.0.0/8', '192.168.0.0/16'],
          },
        ]),
        [
          {
            path: `${C}/sites/s1`,
            fields: [
              { field: 'labels/tier', added: ['edge'], deleted: [] },
              { field: 'labels/zone', added: ['y'], deleted: ['x'] },
              { field: 'management-ipv4-access-list[1]', added: ['192.168.0.0/16'], deleted: [] },
            ],
          },
        ],
      );
      assert.equal(
        await dryRun(api, [{ 'x-path': `${C}/sites/s2`, type: 'edge', topology: { 'parent-site': 's1' } }]),
        [
          {
            path: `${C}/sites/s2`,
            fields: [
              { field: 'name', added: ['s2'], deleted: [] },
              { field: 'topology/parent-site', added: ['s1'], deleted: [] },
              { field: 'type', added: ['edge'], deleted: [] },
            ],
          },
        ],
      );
      assert.equal(await dryRun(api, [{ 'x-path': `${C}/applications/a2`, version: '1' }]), []);
    },
  );

  t('dry-run on each single-resource write', async (api) => {
    const run = async (method: string, path: string, opts: Parameters<TestApi['json']>[2], expected: Impacted[]) => {
      const r = await api.json(method, `${path}?dry-run`, opts);
      assert.is(r.status, 200, `${method} ${path}: ${JSON.stringify(r.body)}`);
      assert.equal(
        (r.body as { 'impacted-resources': Impacted[] })['impacted-resources'],
        expected,
        `${method} ${path}`,
      );
    };
    await run('POST', `${C}/applications`, { body: { name: 'a3', version: '1' } }, [
      {
        path: `${C}/applications/a3`,
        fields: [
          { field: 'name', added: ['a3'], deleted: [] },
          { field: 'version', added: ['1'], deleted: [] },
        ],
      },
    ]);
    await run('PUT', `${C}/applications/a2`, { body: { version: '2' } }, [
      { path: `${C}/applications/a2`, fields: [{ field: 'version', added: ['2'], deleted: ['1'] }] },
      { path: `${C}/application-deployments/d2`, fields: [] },
    ]);
    await run(
      'PATCH',
      `${C}/volga/webhooks/w-none`,
      {
        raw: JSON.stringify([{ op: 'replace', path: '/topics', value: ['t', 'u'] }]),
        type: 'application/json-patch+json',
      },
      [{ path: `${C}/volga/webhooks/w-none`, fields: [{ field: 'topics', added: ['u'], deleted: [] }] }],
    );
    await run('PUT', `${C}/system/settings`, { body: { 'default-domain': 'example.test' } }, [
      { path: `${C}/system/settings`, fields: [{ field: 'default-domain', added: ['example.test'], deleted: [] }] },
    ]);
    await run('DELETE', `${C}/sites/s1`, {}, [
      {
        path: `${C}/sites/s1`,
        fields: [
          { field: 'labels/zone', added: [], deleted: ['x'] },
          { field: 'management-ipv4-access-list[0]', added: [], deleted: ['10.0.0.0/8'] },
          { field: 'name', added: [], deleted: ['s1'] },
        ],
      },
    ]);
    // A dry-run meets the same errors as the real request.
    assert.is((await api.json('POST', `${C}/applications?dry-run`, { body: { name: 'a1' } })).status, 409);
    assert.is((await api.json('DELETE', `${C}/sites/nope?dry-run`)).status, 404);
  });

  t('dry-run where it is not supported is a 400 naming the parameter', async (api) => {
    for (const [method, path, body] of [
      ['POST', '/v1/state/volga/webhooks/w-none/restart', undefined],
      ['POST', '/v1/state/volga/topics/t/produce', { payload: 'x' }],
      ['POST', '/v1/strongbox/unseal', { key: 'x' }],
      ['GET', C, undefined],
      ['GET', `${C}/applications/a1`, undefined],
    ] as const) {
      const r = await api.json(method, `${path}?dry-run`, body ? { body } : {});
      assert.is(r.status, 400, `${method} ${path}: ${JSON.stringify(r.body)}`);
      assert.is(infos(r.body)[0]?.parameter, 'dry-run', path);
    }
    const both = await api.json('PATCH', `${C}?dry-run&validate`, {
      body: [{ 'x-path': `${C}/applications/a1`, version: '5' }],
    });
    assert.is(both.status, 400);
  });

  t('validate: 204 when valid, on /v1/config and every single-resource write', async (api) => {
    const ok = async (method: string, path: string, opts: Parameters<TestApi['json']>[2] = {}) => {
      const r = await api.json(method, `${path}?validate`, opts);
      assert.is(r.status, 204, `${method} ${path}: ${JSON.stringify(r.body)}`);
    };
    await ok('PATCH', C, {
      body: [
        { 'x-path': `${C}/applications/a9`, version: '1' },
        { 'x-path': `${C}/applications/a1`, 'x-operation': 'delete' },
      ],
    });
    await ok('POST', C, { body: [{ 'x-path': `${C}/applications/a9`, version: '1' }] });
    await ok('POST', `${C}/applications`, { body: { name: 'a9' } });
    await ok('PUT', `${C}/applications/a1`, { body: { version: '4' } });
    await ok('PATCH', `${C}/applications/a1`, { body: { version: '4' } });
    await ok('DELETE', `${C}/applications/a1`);
  });

  t('validate: one 400 listing every problem, each with its x-path and field or position', async (api) => {
    const r = await api.json('PATCH', `${C}?validate`, {
      body: [
        {
          'x-path': `${C}/sites/s1`,
          'x-operation': 'update',
          labels: { zone: 1 },
          'management-ipv4-access-list': ['10.0.0.0/33'],
        },
        hook('w-bad', { topics: [], 'match-re': ['a(?=b)'], url: 'http://x/${NOPE}' }),
        {
          'x-path': `${C}/application-deployments/d3`,
          'application-name': 'a1',
          placement: { 'match-site-labels': 'zone = ' },
        },
      ],
    });
    assert.is(r.status, 400, JSON.stringify(r.body));
    const got = infos(r.body).map((i) => `${i['x-path']} ${i.code} ${i.path}`);
    const want = [
      `${C}/sites/s1 schema-type labels/zone`,
      `${C}/sites/s1 schema-pattern management-ipv4-access-list[0]`,
      `${C}/volga/webhooks/w-bad no-topics topics`,
      `${C}/volga/webhooks/w-bad regex-unsupported match-re[0]`,
    ];
    for (const w of want) assert.ok(got.includes(w), `missing "${w}" in ${JSON.stringify(got)}`);
    assert.ok(
      got.some((g) => g.startsWith(`${C}/volga/webhooks/w-bad `) && g.endsWith(' url')),
      `url problem in ${JSON.stringify(got)}`,
    );
    assert.ok(
      got.some((g) => g.startsWith(`${C}/application-deployments/d3 `) && g.endsWith(' placement/match-site-labels')),
      `label problem in ${JSON.stringify(got)}`,
    );
    assert.is(infos(r.body).find((i) => i.code === 'regex-unsupported')?.position, 1);

    const single = await api.json('PUT', `${C}/volga/webhooks/w-none?validate`, {
      body: { 'site-placement': { 'all-sites': true }, url: 'http://x/${NOPE}', 'no-match-re': ['(a)\\1'] },
    });
    assert.is(single.status, 400);
    const codes = infos(single.body).map((i) => i.path);
    for (const p of ['data', 'url', 'no-match-re[0]', 'topics'])
      assert.ok(codes.includes(p), `${p} in ${JSON.stringify(single.body)}`);
  });
});

test.run();
